bouquet_http::main!(
    handler = decommission_vase::handler,
    with = bouquet_iot::Registrar::aws
);
