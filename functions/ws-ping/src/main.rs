bouquet_runtime::main!(function = ws_ping::Ping);
