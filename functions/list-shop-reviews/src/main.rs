bouquet_http::main!(handler = list_shop_reviews::handler);
