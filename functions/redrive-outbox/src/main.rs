bouquet_runtime::main!(function = redrive_outbox::Redrive);
