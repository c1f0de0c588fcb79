bouquet_http::main!(handler = put_delivery_settings::handler);
