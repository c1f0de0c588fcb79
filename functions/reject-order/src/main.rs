bouquet_http::main!(handler = reject_order::handler);
