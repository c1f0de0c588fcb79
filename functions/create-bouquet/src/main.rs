bouquet_http::main!(handler = create_bouquet::handler);
