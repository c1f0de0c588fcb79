//! Every HTTP function's `lib.rs` becomes a module of the system tests, with its row in
//! `HTTP_FUNCTIONS`: a new route's crate is found here, not written into a table or this
//! crate's dependencies. An HTTP function is a crate under `functions/` whose `main.rs` is
//! `bouquet_http::main!`; its `lib.rs` uses only what this crate depends on (bouquet-app with
//! every feature, bouquet-http, serde, serde_json, tokio).

use std::fmt::Write;
use std::path::Path;

fn main() {
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../functions");
    let functions = functions.canonicalize().expect("functions/ exists");
    // A directory: Cargo reruns this when anything under it changes (a new crate too).
    println!("cargo:rerun-if-changed={}", functions.display());

    let mut binaries: Vec<String> = std::fs::read_dir(&functions)
        .expect("functions/ is readable")
        .filter_map(Result::ok)
        .filter(|entry| {
            std::fs::read_to_string(entry.path().join("src/main.rs"))
                .is_ok_and(|main| main.contains("bouquet_http::main!"))
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    binaries.sort();

    let mut modules = String::new();
    let mut rows = String::new();
    for binary in &binaries {
        let module = binary.replace('-', "_");
        let lib = functions.join(binary).join("src/lib.rs");
        writeln!(
            modules,
            "#[path = {:?}]\npub mod {module};",
            lib.display().to_string()
        )
        .unwrap();
        writeln!(rows, "    {binary:?} => {module},").unwrap();
    }
    let generated = format!("{modules}\nhttp_functions! {{\n{rows}}}\n");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("http_functions.rs");
    std::fs::write(out, generated).expect("OUT_DIR is writable");
}
