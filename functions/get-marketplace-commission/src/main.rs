bouquet_http::main!(handler = get_marketplace_commission::handler);
