bouquet_app::main!(
    handler = broadcast_events::handler,
    with = bouquet_app::live::LivePorts::from_env
);
