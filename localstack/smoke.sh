#!/usr/bin/env bash
# The smoke suite: black-box checks of a running stack over HTTP, WebSocket and MQTT over TLS
# with a registered vase (localstack/system-tests/src/bin/smoke.rs).
#
#   ./localstack/smoke.sh <stack-name>   a deployed stack: its CloudFormation outputs, and three
#                                        smoke users in its user pool (made or reset here; needs
#                                        AWS credentials that may administer the pool)
#   ./localstack/smoke.sh --local        a dev stack of its own on the emulator (ports 3600-3603),
#                                        as CI runs it
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_DIR"

TARGET_DIR="${CARGO_TARGET_DIR:-$REPO_DIR/target}"
if [ "${1:-}" = "--local" ]; then
  trap stop_devstack_and_emulator EXIT
  ensure_debian_packages mosquitto
  [ "${2:-}" = "--no-build" ] || build_workspace
  start_emulator
  start_devstack "smoke-$(date +%s)" 3600 3601 3603 --no-seed
  "$TARGET_DIR/debug/smoke" --api http://127.0.0.1:3600 --ws ws://127.0.0.1:3601 \
    --mqtt 127.0.0.1:3603 --ca "$BOUQUET_IOT_DIR/ca.pem" --local-tokens \
    || { log "dev stack log tail:"; grep -v '"level":"INFO"' "$DEVSTACK_LOG" | tail -30 >&2; exit 1; }
  exit 0
fi

STACK="${1:?usage: smoke.sh <stack-name> | --local}"
ensure_deploy_venv
cargo build --locked -p system-tests --bin smoke
# The stack's outputs, and the smoke users with a fresh password for this run.
eval "$("$DEPLOY_VENV/bin/python" - "$STACK" <<'PY'
import secrets, shlex, sys
import boto3

stack = sys.argv[1]
outputs = {o["OutputKey"]: o["OutputValue"] for o in
           boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])}
pool, client = outputs["UserPoolId"], outputs["UserPoolClientId"]
idp = boto3.client("cognito-idp")
password = "Sm0ke-" + secrets.token_urlsafe(18)
for role in ("admin", "vendor", "customer"):
    email = f"smoke-{role}@example.invalid"
    try:
        idp.admin_create_user(UserPoolId=pool, Username=email, MessageAction="SUPPRESS",
                              UserAttributes=[{"Name": "email", "Value": email},
                                              {"Name": "email_verified", "Value": "true"}])
    except idp.exceptions.UsernameExistsException:
        pass
    idp.admin_set_user_password(UserPoolId=pool, Username=email, Password=password, Permanent=True)
    if role == "admin":
        idp.admin_add_user_to_group(UserPoolId=pool, Username=email, GroupName="admin")
for name, value in (("API_URL", outputs["ApiUrl"]), ("WS_URL", outputs["WebSocketUrl"]),
                    ("CLIENT_ID", client), ("SMOKE_PASSWORD", password)):
    print(f"{name}={shlex.quote(value)}")
PY
)"
export SMOKE_PASSWORD
"$TARGET_DIR/debug/smoke" --api "$API_URL" --ws "$WS_URL" --user-pool-client-id "$CLIENT_ID"
