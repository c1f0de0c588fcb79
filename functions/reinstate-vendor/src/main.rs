bouquet_http::main!(handler = reinstate_vendor::handler);
