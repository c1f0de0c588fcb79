bouquet_http::main!(handler = create_vendor::handler);
