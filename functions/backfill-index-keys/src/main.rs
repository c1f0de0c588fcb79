bouquet_app::main!(handler = backfill_index_keys::handler);
