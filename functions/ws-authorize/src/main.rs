bouquet_runtime::main!(function = ws_authorize::Authorizer);
