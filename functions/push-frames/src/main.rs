bouquet_app::main!(
    handler = push_frames::handler,
    with = bouquet_app::live::LivePorts::from_env
);
