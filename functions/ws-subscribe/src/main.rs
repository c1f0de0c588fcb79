bouquet_app::main!(
    handler = ws_subscribe::handler,
    with = bouquet_app::realtime::ApiGatewayPusher::from_env
);
