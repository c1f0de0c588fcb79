bouquet_http::main!(handler = get_vase_telemetry::handler);
