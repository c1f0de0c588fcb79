bouquet_http::main!(handler = decommission_vase::handler);
