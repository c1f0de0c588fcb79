bouquet_http::main!(handler = create_order::handler);
