bouquet_http::main!(handler = get_bouquet::handler);
