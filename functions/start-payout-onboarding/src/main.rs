bouquet_http::main!(handler = start_payout_onboarding::handler);
