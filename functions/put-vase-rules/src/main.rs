bouquet_http::main!(handler = put_vase_rules::handler);
