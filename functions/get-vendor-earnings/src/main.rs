bouquet_http::main!(handler = get_vendor_earnings::handler);
