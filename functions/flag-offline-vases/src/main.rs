bouquet_app::main!(handler = flag_offline_vases::handler);
