bouquet_http::main!(handler = create_review::handler);
