bouquet_http::main!(handler = accept_order::handler);
