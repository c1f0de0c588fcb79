bouquet_app::main!(handler = broadcast_events::handler);
