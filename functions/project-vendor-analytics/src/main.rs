bouquet_app::main!(handler = project_vendor_analytics::handler);
