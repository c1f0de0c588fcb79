bouquet_http::main!(handler = dispatch_order::handler);
