# What `sam build` runs for every function (template.yaml: `BuildMethod: makefile`;
# samconfig.toml: `build_in_source`): `make build-<LogicalId>` with ARTIFACTS_DIR set.
#
# One cargo run builds all the functions: one dependency graph compiled once on every core,
# each function then only linked (no LTO: seconds each). Its stamp is older than any source
# edited since it started, so the first call builds and the other calls of the same `sam build`
# only copy their function's bootstrap. A function's logical id is its crate's name in
# CamelCase plus `Function` (a system test checks it), e.g. CreateOrderFunction ->
# functions/create-order.

CARGO_LAMBDA ?= cargo lambda
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
FUNCTIONS := $(notdir $(wildcard functions/*))
SOURCES := Cargo.toml Cargo.lock $(shell find functions shared -name '*.rs' -o -name Cargo.toml)
BUILT := $(TARGET_DIR)/lambda/.every-function-built

$(BUILT): $(SOURCES)
	mkdir -p $(dir $@) && touch $@.started
	$(CARGO_LAMBDA) build --release --arm64 --locked $(addprefix -p ,$(FUNCTIONS))
	mv $@.started $@

build-%Function: $(BUILT)
	binary=$$(echo '$*' | sed -E 's/([a-z0-9])([A-Z])/\1-\2/g' | tr 'A-Z' 'a-z') && \
	  cp "$(TARGET_DIR)/lambda/$$binary/bootstrap" "$(ARTIFACTS_DIR)/bootstrap"
