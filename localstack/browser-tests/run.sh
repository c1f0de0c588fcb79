#!/usr/bin/env bash
# The web console's browser tests: Debian's Chromium (installed if missing), the pinned
# Playwright, the emulator (started unless one answers) and a dev stack of their own on ports
# 3100 (HTTP and console), 3101 (WebSocket) and 1893 (MQTT), stopped at the end. Extra
# arguments go to unittest (e.g. a test's name).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$REPO_DIR"

DEVSTACK_PID=""
stop_all() {
  if [ -n "$DEVSTACK_PID" ]; then
    kill "$DEVSTACK_PID" 2>/dev/null || true
    wait "$DEVSTACK_PID" 2>/dev/null || true
  fi
  stop_emulator
}
trap stop_all EXIT

ensure_chromium
ensure_browser_venv
start_emulator
log "building the dev stack and every function binary"
cargo build --locked --workspace --bins --exclude vase-simulator

mkdir -p "$RUN_DIR"
log "starting a dev stack for the browser tests (log: $RUN_DIR/browser-devstack.log)"
"${CARGO_TARGET_DIR:-$REPO_DIR/target}/debug/devstack" --stack bouquet-browser up --no-seed \
  --port 3100 --ws-port 3101 --mqtt-port 1893 > "$RUN_DIR/browser-devstack.log" 2>&1 &
DEVSTACK_PID=$!
for _ in $(seq 1 300); do
  if "$VENV/bin/python" -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:3100/config.json", timeout=1)' 2>/dev/null; then
    break
  fi
  if ! kill -0 "$DEVSTACK_PID" 2>/dev/null; then
    log "the dev stack exited:"; cat "$RUN_DIR/browser-devstack.log" >&2; exit 1
  fi
  sleep 0.5
done

log "browser tests (headless $(chromium --version 2>/dev/null || echo chromium))"
CONSOLE_URL=http://127.0.0.1:3100 CONSOLE_MQTT_PORT=1893 \
  "$BROWSER_VENV/bin/python" "$LOCALSTACK_DIR/browser-tests/test_console.py" "$@" \
  || { log "dev stack log tail:"; tail -40 "$RUN_DIR/browser-devstack.log" >&2; exit 1; }
