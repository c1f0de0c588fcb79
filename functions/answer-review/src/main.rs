bouquet_http::main!(handler = answer_review::handler);
