#!/usr/bin/env bash
# The chaos soak (docs/testing.md, "The chaos soak"): a dev stack of its own with faults on
# (ports 3400 HTTP, 3401 WebSocket, 3402 the fault proxy, 3403 MQTT; --port-base moves them),
# seeded traffic for a set
# time, then the faults stop, the system drains and the auditor checks every invariant.
# Exits non-zero on any violation, with the seed to replay.
#
#   ./localstack/soak.sh [--seconds 120] [--seed 7] [--rate 0.05] [--customers 8]
#                        [--vases-per-vendor 2] [--port-base 3400] [--no-build]
#                        [--only function.killed_mid_invocation+latency_spike]
#                        [--parameter-override Name=Value ...]
#                        [--think-ms 50-400] [--write-heavy N] [--season SCALE]
#
# At --rate 0 it is the shop load: it prints requests a second, each route's p50 and p99,
# and where the functions' time went (docs/testing.md, "The shop load"). --think-ms 0 makes
# the customers a closed loop (throughput); --write-heavy N has them compete for N bouquets of
# each shop (reserve, details, pay, cancel). --season 1 first seeds issue 50's season (200
# shops, 50,000 orders, ...; `season`, docs/performance.md) into the table; the auditor then
# checks the load's own shops.
#
# --only injects those kinds of fault only (the names the report prints), to replay one.
# The dev stack runs its schedules 5 times faster (the minutely sweeper every 12 s, the
# outbox redrive every minute), so a soak of minutes sees them run as an hour would.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_DIR"

SECONDS_OF_TRAFFIC=120 SEED=7 RATE=0.05 CUSTOMERS=8 VASES=2 PORT_BASE=3400 BUILD=1 ONLY="" OVERRIDES=() LOAD=() SEASON=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_OF_TRAFFIC="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --customers) CUSTOMERS="$2"; shift 2 ;;
    --vases-per-vendor) VASES="$2"; shift 2 ;;
    --port-base) PORT_BASE="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --only) ONLY=",only=$2"; shift 2 ;;
    --parameter-override) OVERRIDES+=(--parameter-override "$2"); shift 2 ;;
    --think-ms|--write-heavy) LOAD+=("$1" "$2"); shift 2 ;;
    --season) SEASON="$2"; shift 2 ;;
    *) log "unknown option $1"; exit 2 ;;
  esac
done

trap stop_devstack_and_emulator EXIT
ensure_debian_packages mosquitto
[ "$BUILD" = 1 ] && build_workspace
start_emulator
API_PORT=$PORT_BASE WS_PORT=$((PORT_BASE + 1)) FAULTS_PORT=$((PORT_BASE + 2)) MQTT_PORT=$((PORT_BASE + 3))

STACK="soak-$(date +%s)"
# The soak's customers are scripts that reserve, pay and cancel in a loop: the per-customer
# reservation limit (10 a minute) would stall them behind Retry-After, not test the system.
# A sandbox the faults kill leaves its batch invisible for the queues' redelivery time: at
# the deployed 180 s the drain would wait three minutes for it; 30 s (the workers' timeout)
# redelivers the same messages, sooner.
start_devstack "$STACK" "$API_PORT" "$WS_PORT" "$MQTT_PORT" --no-seed --schedule-speedup 5 "${ONE_ADDRESS_CROWD[@]}" \
  --parameter-override ReservationsPerCustomerPerMinute=1000 --parameter-override QueueRedeliverySeconds=30 "${OVERRIDES[@]}" \
  --faults "rate=$RATE,seed=$SEED$ONLY" --faults-port "$FAULTS_PORT"

BIN="${CARGO_TARGET_DIR:-$REPO_DIR/target}/debug"
if [ -n "$SEASON" ]; then
  log "seeding a season (scale $SEASON) into $STACK"
  "$BIN/season" --stack "$STACK" --api "http://127.0.0.1:$API_PORT" --scale "$SEASON" --manifest "$RUN_DIR/$STACK-season.json"
  LOAD+=(--season-manifest "$RUN_DIR/$STACK-season.json")
fi

log "soak: $SECONDS_OF_TRAFFIC s at ${RATE} faults, seed $SEED (stack $STACK)"
SOAK_REPORT="$RUN_DIR/$STACK-report.json" "$BIN/soak" \
  --stack "$STACK" --api "http://127.0.0.1:$API_PORT" --ws "ws://127.0.0.1:$WS_PORT" \
  --mqtt "127.0.0.1:$MQTT_PORT" --ca "$BOUQUET_IOT_DIR/ca.pem" --faults "http://127.0.0.1:$FAULTS_PORT" \
  --seconds "$SECONDS_OF_TRAFFIC" --seed "$SEED" --customers "$CUSTOMERS" --vases-per-vendor "$VASES" "${LOAD[@]}" \
  || { log "dev stack log tail:"; grep -v '"level":"INFO"' "$DEVSTACK_LOG" | tail -40 >&2; exit 1; }
