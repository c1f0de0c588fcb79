bouquet_http::main!(handler = add_vendor_member::handler);
