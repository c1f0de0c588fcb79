bouquet_http::main!(handler = list_vase_alerts::handler);
