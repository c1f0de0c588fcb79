bouquet_app::main!(handler = ws_disconnect::handler);
