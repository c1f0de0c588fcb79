bouquet_app::main!(
    handler = broadcast_events::handler,
    with = bouquet_app::realtime::ApiGatewayPusher::from_env
);
