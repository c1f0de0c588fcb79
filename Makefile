# What `sam build` runs for every function (template.yaml: `BuildMethod: makefile`;
# samconfig.toml: `build_in_source`): `make build-<LogicalId>` with ARTIFACTS_DIR set.
#
# Every call builds all the functions in one cargo run: one dependency graph compiled once on
# every core, each function then only linked (no LTO: seconds each). The first call does the
# work, the others find it fresh. Each call then copies its own function's bootstrap. A
# function's logical id is its crate's name in CamelCase plus `Function` (a system test checks
# it), e.g. CreateOrderFunction -> functions/create-order.

CARGO_LAMBDA ?= cargo lambda
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
FUNCTIONS := $(notdir $(wildcard functions/*))

build-%Function:
	$(CARGO_LAMBDA) build --release --arm64 --locked $(addprefix -p ,$(FUNCTIONS))
	binary=$$(echo '$*' | sed -E 's/([a-z0-9])([A-Z])/\1-\2/g' | tr 'A-Z' 'a-z') && \
	  cp "$(TARGET_DIR)/lambda/$$binary/bootstrap" "$(ARTIFACTS_DIR)/bootstrap"
