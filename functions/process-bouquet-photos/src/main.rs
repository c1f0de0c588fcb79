bouquet_runtime::main!(function = process_bouquet_photos::ProcessPhotos);
