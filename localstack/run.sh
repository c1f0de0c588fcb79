#!/usr/bin/env bash
# Runs the whole system locally: the local cloud (the DynamoDB engine on :4567 and moto on
# :4566, each started here unless one already answers there), the table from template.yaml,
# demo data, and the HTTP API on :3000. Every function runs its built binary under a local Lambda Runtime API; a change to a source file
# is rebuilt in the background and the dev stack restarts the functions whose binary changed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_DIR"

WATCHER=""
stop_all() {
  if [ -n "$WATCHER" ]; then
    pkill -P "$WATCHER" 2>/dev/null || true
    kill "$WATCHER" 2>/dev/null || true
  fi
  stop_emulator
}
trap stop_all EXIT
ensure_debian_packages mosquitto

# What the stack runs: the dev stack and every function's binary (not the test harness, the
# simulator or the benchmark's baseline, which their own commands build).
build_bins() {
  cargo build --locked --workspace --bins --exclude vase-simulator --exclude system-tests \
    --exclude hello-world
}

# Rebuilds the binaries when a Rust source or manifest under functions/ or shared/ changes.
watch_and_rebuild() {
  local stamp="$RUN_DIR/build.stamp"
  touch "$stamp"
  while sleep 2; do
    if [ -n "$(find functions shared -newer "$stamp" \( -name '*.rs' -o -name Cargo.toml \) -print -quit)" ]; then
      touch "$stamp"
      log "sources changed: rebuilding the function binaries"
      build_bins >&2 || log "build failed: the functions keep running their last good binaries"
    fi
  done
}

log "building the dev stack, the DynamoDB engine and every function binary"
build_bins
start_emulator
watch_and_rebuild &
WATCHER=$!
"${CARGO_TARGET_DIR:-$REPO_DIR/target}/debug/devstack" up "$@"
