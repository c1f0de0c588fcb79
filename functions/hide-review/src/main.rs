bouquet_http::main!(handler = hide_review::handler);
