bouquet_http::main!(handler = update_bouquet::handler);
