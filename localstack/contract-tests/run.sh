#!/usr/bin/env bash
# The contract tests: infra/openapi.yaml validated (openapi-spec-validator), then schemathesis
# fuzzing a dev stack of their own (ports 3200, 3201, 1993; seeded) from that document with a
# token per role. Prints the cases per route. Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$REPO_DIR"

trap stop_devstack_and_emulator EXIT

ensure_venv
ensure_debian_packages mosquitto
log "validating infra/openapi.yaml (openapi-spec-validator, OpenAPI 3.1)"
"$VENV/bin/openapi-spec-validator" infra/openapi.yaml

ensure_contract_venv
build_workspace
start_emulator
STACK="bouquet-contract-$(date +%s)"
start_devstack "$STACK" 3200 3201 1993 "${ONE_ADDRESS_CROWD[@]}"

log "schemathesis against the dev stack ($STACK)"
CONTRACT_API=http://127.0.0.1:3200 CONTRACT_TABLE="$STACK-MarketTable" \
  "$CONTRACT_VENV/bin/pytest" -q -p no:cacheprovider \
  "$LOCALSTACK_DIR/contract-tests/test_contract.py" "$@" \
  || { log "dev stack log tail:"; tail -40 "$DEVSTACK_LOG" >&2; exit 1; }
