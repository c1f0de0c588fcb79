bouquet_http::main!(handler = rotate_vase_certificate::handler);
