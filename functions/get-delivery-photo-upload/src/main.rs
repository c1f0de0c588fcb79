bouquet_http::main!(handler = get_delivery_photo_upload::handler);
