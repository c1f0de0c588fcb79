bouquet_http::main!(handler = fulfil_order::handler);
