bouquet_http::main!(handler = list_vendors::handler);
