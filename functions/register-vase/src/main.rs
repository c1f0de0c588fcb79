bouquet_http::main!(handler = register_vase::handler);
