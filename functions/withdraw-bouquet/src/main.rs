bouquet_http::main!(handler = withdraw_bouquet::handler);
