bouquet_app::main!(
    handler = reconcile_vase_things::handler,
    with = bouquet_app::iot::Registrar::aws
);
