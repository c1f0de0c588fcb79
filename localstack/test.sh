#!/usr/bin/env bash
# Runs every check and test: format, lints, unit tests and the tests against the AWS
# emulator, which this script starts (and stops) itself. Needs only Rust and Python 3.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_DIR"

trap stop_emulator EXIT
ensure_venv
start_emulator

log "the emulator's speed changes answer as moto does"
env -u AWS_ENDPOINT_URL "$VENV/bin/python" "$LOCALSTACK_DIR/test_emulator.py"
log "cfn-lint template.yaml"
"$VENV/bin/cfn-lint" template.yaml
ensure_deploy_venv
log "sam validate --lint"
"$DEPLOY_VENV/bin/sam" validate --lint --template template.yaml
log "cargo fmt --check"
cargo fmt --all -- --check
log "crate arrows (DESIGN.md section 3)"
check_arrows
log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
log "building the function binaries the system tests start"
cargo build --locked -p get-bouquet -p list-bouquets -p create-order -p pay-order
log "cargo test (AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL)"
cargo test --workspace --locked "$@"

# The web console in headless Chromium against a dev stack of its own (ports 3100, 3101, 1893).
log "browser tests of the web console"
bash "$LOCALSTACK_DIR/browser-tests/run.sh"

# The published contract: infra/openapi.yaml validated, then schemathesis against a dev stack
# of its own (ports 3200, 3201, 1993), a token per role; prints the cases per route.
log "contract tests (openapi-spec-validator, schemathesis)"
bash "$LOCALSTACK_DIR/contract-tests/run.sh"

# What Lambda runs: one function cross-compiled for arm64 with the release profile, by the
# pinned cargo-lambda and zig, as `sam build` does it for every function (all of them:
# `./localstack/sam-build.sh`; figures in the README, "Build and CI times").
log "cargo lambda build --release --arm64 --bin publish-events"
if ensure_aarch64_target; then
  PATH="$DEPLOY_VENV/bin:$PATH" cargo lambda build --release --arm64 --locked --bin publish-events
  ls -l "${CARGO_TARGET_DIR:-target}/lambda/publish-events/bootstrap" >&2
else
  log "!!! CROSS-COMPILE NOT RUN: rustup could not install the aarch64-unknown-linux-gnu standard library (no network to static.rust-lang.org?)"
fi
