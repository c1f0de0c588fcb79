bouquet_http::main!(
    handler = request_photo_upload::handler,
    with = request_photo_upload::signer
);
