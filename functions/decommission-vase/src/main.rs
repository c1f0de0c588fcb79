bouquet_http::main!(
    handler = decommission_vase::handler,
    with = bouquet_app::iot::Registrar::aws
);
