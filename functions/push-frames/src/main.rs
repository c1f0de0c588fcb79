bouquet_app::main!(handler = push_frames::handler);
