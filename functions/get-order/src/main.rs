bouquet_http::main!(handler = get_order::handler);
