bouquet_http::main!(handler = get_photo_upload::handler);
