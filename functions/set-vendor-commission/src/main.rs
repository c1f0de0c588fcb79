bouquet_http::main!(handler = set_vendor_commission::handler);
