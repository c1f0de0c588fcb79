#!/usr/bin/env bash
# Builds every function for Lambda (arm64, provided.al2023) with `sam build`, the way a
# deployment does: the template's makefile build method runs the Makefile, whose one
# cargo-lambda run cross-compiles every function with zig. Installs the pinned tools into
# localstack/.venv-deploy first. Extra arguments go to `sam build` (e.g. a function's logical
# id to build just that one).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_DIR"

ensure_deploy_venv
ensure_aarch64_target
# cargo-lambda and zig come from the virtualenv.
export PATH="$DEPLOY_VENV/bin:$PATH"
sam build "$@"
