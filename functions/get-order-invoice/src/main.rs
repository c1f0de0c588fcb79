bouquet_http::main!(handler = get_order_invoice::handler);
