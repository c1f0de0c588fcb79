bouquet_app::main!(handler = ws_connect::handler);
