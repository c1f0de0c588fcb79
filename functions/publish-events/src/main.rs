bouquet_runtime::main!(function = publish_events::Publisher);
