bouquet_http::main!(handler = request_photo_upload::handler);
