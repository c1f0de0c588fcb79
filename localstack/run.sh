#!/usr/bin/env bash
# Runs the whole system locally: the AWS emulator (started here unless one already answers
# on :4566), the table from template.yaml, demo data, and the HTTP API on :3000.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_DIR"

trap stop_emulator EXIT
start_emulator
cargo build --locked -p devstack
"${CARGO_TARGET_DIR:-$REPO_DIR/target}/debug/devstack" up "$@"
