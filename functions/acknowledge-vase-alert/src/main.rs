bouquet_http::main!(handler = acknowledge_vase_alert::handler);
