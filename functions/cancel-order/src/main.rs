bouquet_http::main!(handler = cancel_order::handler);
