bouquet_http::main!(
    handler = register_vase::handler,
    with = register_vase::Registrar::aws
);
