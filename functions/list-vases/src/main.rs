bouquet_http::main!(handler = list_vases::handler);
