bouquet_http::main!(handler = request_delivery_photo_upload::handler);
