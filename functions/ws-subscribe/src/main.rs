bouquet_app::main!(handler = ws_subscribe::handler);
