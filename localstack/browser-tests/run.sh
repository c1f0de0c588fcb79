#!/usr/bin/env bash
# The web console's browser tests: Debian's Chromium (installed if missing), the pinned
# Playwright, the emulator (started unless one answers) and a dev stack of their own on ports
# 3100 (HTTP and console), 3101 (WebSocket) and 1893 (MQTT), stopped at the end. Extra
# arguments go to unittest (e.g. a test's name).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$REPO_DIR"

trap stop_devstack_and_emulator EXIT

ensure_debian_packages chromium mosquitto
ensure_browser_venv
ensure_axe
build_workspace
start_emulator

# A stack of its own each run: one left on a long-lived emulator keeps its queues' backlog.
start_devstack "bouquet-browser-$(date +%s)" 3100 3101 1893 --no-seed "${ONE_ADDRESS_CROWD[@]}"

log "browser tests (headless $(chromium --version 2>/dev/null || echo chromium))"
CONSOLE_URL=http://127.0.0.1:3100 CONSOLE_MQTT_PORT=1893 \
  "$BROWSER_VENV/bin/python" "$LOCALSTACK_DIR/browser-tests/test_console.py" "$@" \
  || { log "dev stack log tail:"; tail -40 "$DEVSTACK_LOG" >&2; exit 1; }
