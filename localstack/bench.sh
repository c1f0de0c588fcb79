#!/usr/bin/env bash
# The cold-start benchmark docs/performance.md quotes: builds every function and
# a hello-world lambda_runtime binary in one release build, starts the emulator (unless one
# answers), and runs `devstack bench`: each binary as a process under a local Lambda Runtime
# API, reaching the emulator through a TLS endpoint. Prints tables with ratios to the hello
# world. Extra arguments go to `devstack bench` (e.g. --cold-runs 20).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_DIR"

trap stop_emulator EXIT
ensure_venv

packages=(-p devstack -p hello-world -p dynamodb-engine)
for function in functions/*/; do
  packages+=(-p "$(basename "$function")")
done
log "cargo build --release (every function, the hello world, the dev stack)"
cargo build --release --locked "${packages[@]}"
target="${CARGO_TARGET_DIR:-target}/release"
DYNAMODB_ENGINE_BIN="$target/dynamodb-engine" start_emulator
"$target/devstack" bench --binaries "$target" "$@"
