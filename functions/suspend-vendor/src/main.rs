bouquet_http::main!(handler = suspend_vendor::handler);
