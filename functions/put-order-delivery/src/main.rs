bouquet_http::main!(handler = put_order_delivery::handler);
