bouquet_http::main!(handler = delete_cart_item::handler);
