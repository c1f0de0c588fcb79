bouquet_app::main!(handler = reconcile_vase_things::handler);
