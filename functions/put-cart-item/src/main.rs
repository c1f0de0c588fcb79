bouquet_http::main!(handler = put_cart_item::handler);
