//! Prints the example request of an HTTP function (its OpenAPI operation's, as API Gateway
//! sends it), for `sam local invoke <Function> -e <file>` or a look:
//! `cargo run -q -p system-tests --bin fixture -- create-review > event.json`.

fn main() {
    let Some(binary) = std::env::args().nth(1) else {
        eprintln!(
            "usage: fixture <function>   (an HTTP function: its x-function in infra/openapi.yaml)"
        );
        std::process::exit(2);
    };
    match bouquet_testkit::contract::route_event(&binary) {
        Some(event) => println!("{}", serde_json::to_string_pretty(&event).expect("JSON")),
        None => {
            eprintln!("infra/openapi.yaml has no operation with `x-function: {binary}`");
            std::process::exit(1);
        }
    }
}
