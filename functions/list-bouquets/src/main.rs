bouquet_http::main!(handler = list_bouquets::handler);
