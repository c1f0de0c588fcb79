bouquet_http::main!(handler = get_delivery_settings::handler);
