bouquet_http::main!(handler = get_vase_rules::handler);
