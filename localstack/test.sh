#!/usr/bin/env bash
# Runs every check and test: format, lints, unit tests and the tests against the AWS
# emulator, which this script starts (and stops) itself. Needs only Rust and Python 3.
#
# On 2 cores compiling is most of the time, so each thing is compiled once and the rest is
# arranged around it: the tools download while the debug build runs; clippy lints the
# workspace inside that build (below) instead of checking every dependency a second time; the
# arm64 cross-compile runs throughout at the lowest CPU priority, in a target directory of its
# own (so no cargo waits on another's lock). Every job's exit status counts, and its output is
# printed when it is collected.
set -euo pipefail
set -m # each background job its own process group, so that an early exit can stop it whole
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_DIR"

TARGET_DIR="${CARGO_TARGET_DIR:-$REPO_DIR/target}"

# Clippy as the compiler of the workspace's own crates. `cargo clippy -- -D warnings` is
# `cargo check` with clippy-driver as RUSTC_WORKSPACE_WRAPPER and `-D warnings` in CLIPPY_ARGS;
# the debug build with the same two runs every lint on the workspace's libraries, binaries and
# tests (it has no benches or examples) while it compiles, and the dependencies (the SDK crates
# above all) are not compiled a second time for a check: 2 min less on 2 cores from an empty
# cache. Every cargo build of this script and of the suites it runs inherits them, so they all
# ask for the same build.
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
JOBS_DIR="$RUN_DIR/jobs"
declare -A JOB_PIDS=()

# start_job NAME COMMAND...: runs COMMAND in the background, its output to $JOBS_DIR/NAME.log.
start_job() {
  local name="$1"
  shift
  mkdir -p "$JOBS_DIR"
  ("$@") > "$JOBS_DIR/$name.log" 2>&1 &
  JOB_PIDS[$name]=$!
}

# finish_job NAME: waits for the job, prints its output and returns its exit status.
finish_job() {
  local name="$1" status=0
  wait "${JOB_PIDS[$name]}" || status=$?
  unset "JOB_PIDS[$name]"
  if [ "$status" -ne 0 ]; then
    log "!!! $name failed (exit $status):"
  fi
  cat "$JOBS_DIR/$name.log" >&2
  return "$status"
}

stop_jobs_and_emulator() {
  local name
  for name in "${!JOB_PIDS[@]}"; do
    kill -- "-${JOB_PIDS[$name]}" 2>/dev/null || true
  done
  stop_emulator
}
trap stop_jobs_and_emulator EXIT

# The deploy path: `sam validate --lint`, then one function cross-compiled for Lambda (arm64)
# by the pinned cargo-lambda and zig, as `sam build` does it for every function (all of them,
# with the full release profile: `./localstack/sam-build.sh`; figures in docs/testing.md, "Build and
# CI times"). It proves what breaks a deployment build (the zig toolchain, aws-lc's C code and
# the SDK crates compiled for aarch64, the release profile's panic, LTO and strip settings, the
# link) at `opt-level = 0`: that is 150 CPU-seconds instead of 260, on a run that is bound by the
# CPU. It starts as soon as its tools are in, at the lowest CPU priority: it takes what the
# debug build and the tests leave idle, and its serial tail runs beside the tests.
deploy_checks_and_cross_compile() {
  ensure_deploy_venv
  log "sam validate --lint"
  "$DEPLOY_VENV/bin/sam" validate --lint --template template.yaml
  if ! ensure_aarch64_target; then
    log "!!! CROSS-COMPILE NOT RUN: rustup could not install the aarch64-unknown-linux-gnu standard library (no network to static.rust-lang.org?)"
    return 0
  fi
  log "cargo lambda build --release --arm64 -p publish-events, opt-level 0 (nice 19, target dir $TARGET_DIR/ci-arm64)"
  nice -n 19 env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS PATH="$DEPLOY_VENV/bin:$PATH" \
    CARGO_TARGET_DIR="$TARGET_DIR/ci-arm64" CARGO_PROFILE_RELEASE_OPT_LEVEL=0 \
    cargo lambda build --release --arm64 --locked -p publish-events
  ls -l "$TARGET_DIR/ci-arm64/lambda/publish-events/bootstrap"
}

# The emulator's tools, and the template's lint with them; then the workflows' (actionlint).
emulator_tools_and_cfn_lint() {
  ensure_venv
  log "cfn-lint template.yaml"
  "$VENV/bin/cfn-lint" template.yaml
  ensure_actionlint
  log "actionlint .github/workflows"
  "$ACTIONLINT"
}

log "cargo fmt --check"
cargo fmt --all -- --check

log "the docs: every link and anchor resolves, nothing outside the repository, the layout names what exists"
python3 "$LOCALSTACK_DIR/check_docs.py"
log "no import loop between the modules of a crate"
python3 "$LOCALSTACK_DIR/check_module_loops.py"

log "in the background: the crate arrows; the pinned tools (emulator and cfn-lint, browser and contract tools, chromium and mosquitto); the SAM CLI, cargo-lambda and zig for sam validate and the arm64 cross-compile"
start_job crate-arrows check_arrows
start_job emulator-tools emulator_tools_and_cfn_lint
start_job browser-tools ensure_browser_venv
start_job contract-tools ensure_contract_venv
start_job debian-packages ensure_debian_packages chromium mosquitto
start_job deploy-path deploy_checks_and_cross_compile

log "the debug build every suite shares, linted by clippy -D warnings"
build_workspace

log "crate arrows (docs/architecture.md, the layout)"
finish_job crate-arrows
finish_job emulator-tools
# Mosquitto (the local IoT Core's broker) before the tests that start one.
finish_job debian-packages
start_emulator
log "moto's corrections hold, and it refuses DynamoDB (the DynamoDB engine's)"
env -u AWS_ENDPOINT_URL "$VENV/bin/python" "$LOCALSTACK_DIR/test_emulator.py"
log "cargo test (AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB=$AWS_ENDPOINT_URL_DYNAMODB)"
cargo test --workspace --locked "$@"

# The web console in headless Chromium against a dev stack of its own (ports 3100, 3101, 1893).
finish_job browser-tools
log "browser tests of the web console"
bash "$LOCALSTACK_DIR/browser-tests/run.sh"

# The published contract: infra/openapi.yaml validated, then schemathesis against a dev stack
# of its own (ports 3200, 3201, 1993), a token per role; prints the cases per route.
finish_job contract-tools
log "contract tests (openapi-spec-validator, schemathesis)"
bash "$LOCALSTACK_DIR/contract-tests/run.sh"

# The smoke suite a team runs against a deployed stack (./localstack/smoke.sh <stack>), here
# against a dev stack of its own (ports 3600-3603): HTTP, WebSocket, MQTT over TLS.
log "smoke suite (black-box: HTTP, WebSocket, a registered vase over MQTT/TLS)"
bash "$LOCALSTACK_DIR/smoke.sh" --local --no-build

# Traffic and faults at once, then the auditor (docs/testing.md, "The chaos soak"): a dev stack
# of its own (ports 3400-3403), 60 s at 5% faults with seed 7 (6 customers, 2 vases: a load two
# cores drain in a few minutes), the drain, every invariant.
log "the chaos soak (60 s of traffic at 5% faults, seed 7; then the drain and the auditor)"
bash "$LOCALSTACK_DIR/soak.sh" --seconds 60 --seed 7 --rate 0.05 --customers 6 --vases-per-vendor 2 --no-build

log "waiting for sam validate and the arm64 cross-compile"
finish_job deploy-path
log "all checks and tests passed"
