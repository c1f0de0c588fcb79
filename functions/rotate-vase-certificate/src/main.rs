bouquet_http::main!(
    handler = rotate_vase_certificate::handler,
    with = bouquet_app::iot::Registrar::aws
);
