# swift-dss: `make run` sets everything up and runs the main job; `make test` runs every test.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP_APT := $(VENV)/.apt-stamp
STAMP_PY := $(VENV)/.py-stamp
CARGO ?= $(shell command -v cargo 2>/dev/null || echo $(HOME)/.cargo/bin/cargo)
TIER_BIN := tier/target/release/dss-tier
APT_PACKAGES := memcached fuse3 libfuse3-dev pkg-config rsync sqlite3 curl \
	libcurl4-openssl-dev libssl-dev
RUN_DIR ?= $(CURDIR)/run

.PHONY: setup tier run demo test lint unit integration tier-test properties bench clean

setup: $(STAMP_APT) $(STAMP_PY) tier

# cargo decides what is stale; the link puts dss-tier beside the Python tools.
tier: $(STAMP_APT) $(STAMP_PY)
	$(CARGO) build --quiet --release --manifest-path tier/Cargo.toml
	@ln -sf $(CURDIR)/$(TIER_BIN) $(VENV)/bin/dss-tier

$(STAMP_APT):
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages: $$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@mkdir -p $(VENV) && touch $@

$(STAMP_PY): pyproject.toml $(STAMP_APT)
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

# The main job: the paper's caching experiment at the default scale (resumable).
run: setup
	$(VENV)/bin/dss experiment caching --out $(RUN_DIR)/experiment/caching

# A short tour: an all-in-one cluster, classified uploads, classes read back.
demo: setup
	$(VENV)/bin/dss demo --dir $(RUN_DIR)/saio

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(CARGO) fmt --manifest-path tier/Cargo.toml --all --check
	$(CARGO) clippy --quiet --release --manifest-path tier/Cargo.toml --all-targets -- -D warnings

# `make test` checks the engine's properties on one fixed draw of cases, so that its
# verdict is the code's and not the draw's; `make properties` draws fresh ones.
PROPERTY_SEED ?= 1121
PROPERTY_RUNS ?= 20
PROPERTY_TESTS := tests/unit/test_formats.py tests/unit/test_class_policy.py \
	tests/unit/test_classifier.py

tier-test: setup
	PROPTEST_RNG_SEED=$(PROPERTY_SEED) $(CARGO) test --release --manifest-path tier/Cargo.toml

# Property tests on fresh random cases: PROPERTY_RUNS draws of the engine's (512 cases
# each), and the Python properties with 2,000 examples each. A failure prints the case;
# proptest also keeps it under tier/crates/dss-engine/proptest-regressions/.
properties: setup
	@for i in $$(seq $(PROPERTY_RUNS)); do \
		echo "engine properties, draw $$i of $(PROPERTY_RUNS)"; \
		$(CARGO) test --quiet --release --manifest-path tier/Cargo.toml -p dss-engine \
			--test props || exit 1; \
	done
	$(VENV)/bin/pytest -q --hypothesis-profile explore $(PROPERTY_TESTS)

unit: setup
	$(VENV)/bin/pytest -q tests/unit

integration: setup
	$(VENV)/bin/pytest -q tests/integration

test: setup lint tier-test
	$(VENV)/bin/pytest -q -ra tests

bench: setup
	$(VENV)/bin/dss bench all --out $(RUN_DIR)/bench

clean:
	-$(VENV)/bin/dss saio down --dir $(RUN_DIR)/saio
	rm -rf $(RUN_DIR)
