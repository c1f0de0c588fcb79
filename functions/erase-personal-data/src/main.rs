bouquet_http::main!(handler = erase_personal_data::handler);
