bouquet_http::main!(handler = get_cart::handler);
