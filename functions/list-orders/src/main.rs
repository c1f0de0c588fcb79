bouquet_http::main!(handler = list_orders::handler);
