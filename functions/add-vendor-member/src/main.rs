bouquet_http::main!(
    handler = add_vendor_member::serve,
    with = add_vendor_member::directory
);
