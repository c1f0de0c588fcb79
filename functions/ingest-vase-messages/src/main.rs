bouquet_runtime::main!(function = ingest_vase_messages::Ingest);
