bouquet_http::main!(handler = edit_review::handler);
