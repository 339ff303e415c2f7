# swift-dss: `make run` sets everything up and runs the main job; `make test` runs every test.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP_APT := $(VENV)/.apt-stamp
STAMP_PY := $(VENV)/.py-stamp
STAMP_SWIFT_TESTS := $(VENV)/.swift-tests-stamp
SWIFT_TESTS := $(VENV)/swift-tests
# The Rust toolchain: the first cargo, of the one on PATH, ~/.cargo/bin's and Debian's, that is
# at least the tier's rust-version; `make rust` installs Debian's when none is.
RUST_VERSION := $(firstword $(shell sed -n 's/^rust-version *= *"\(.*\)"/\1/p' \
	tier/crates/dss-tier/Cargo.toml tier/Cargo.toml))
new_enough_cargo = $(shell v=$$($(1) --version 2>/dev/null | cut -d' ' -f2); \
	[ -n "$$v" ] && printf '%s\n' $(RUST_VERSION) "$${v%%-*}" | sort -V -C && echo $(1))
CARGO ?= $(firstword $(foreach c,$(shell command -v cargo 2>/dev/null) $(HOME)/.cargo/bin/cargo \
	/usr/bin/cargo,$(call new_enough_cargo,$(c))))
# bookworm-security's Rust; bookworm's own is older than the tier needs. It has no clippy.
DEBIAN_RUST := cargo-web rustfmt-web
CARGO_DEB_VERSION := 3.8.0
TIER_BIN := tier/target/release/dss-tier
APT_PACKAGES := memcached fuse3 libfuse3-dev pkg-config rsync sqlite3 curl \
	libcurl4-openssl-dev libssl-dev fio
RUN_DIR ?= $(CURDIR)/run

.PHONY: setup rust tier deb run demo test lint unit integration tier-test properties bench compat clean

setup: $(STAMP_APT) $(STAMP_PY) $(STAMP_SWIFT_TESTS) tier

rust: $(STAMP_APT)
	@if [ -z "$(CARGO)" ]; then \
		echo "no cargo >= $(RUST_VERSION) here: installing Debian's $(DEBIAN_RUST)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -q && apt-get install -y -q --no-install-recommends $(DEBIAN_RUST); \
	fi

# cargo decides what is stale; the link puts dss-tier beside the Python tools.
tier: rust
	@[ -n "$(CARGO)" ] || { echo "error: no cargo >= $(RUST_VERSION) on PATH, in" \
		"$(HOME)/.cargo/bin or from Debian (enable bookworm-security, or install rustup)"; exit 1; }
	$(CARGO) build --quiet --release --manifest-path tier/Cargo.toml
	@mkdir -p $(VENV)/bin && ln -sf $(CURDIR)/$(TIER_BIN) $(VENV)/bin/dss-tier

# dss-tier as a Debian package, tier/target/debian/dss-tier_VERSION_ARCH.deb, made by a pinned
# cargo-deb from [package.metadata.deb] of tier/crates/dss-tier/Cargo.toml.
deb: tier
	@$(CARGO) deb --version 2>/dev/null | grep -qF $(CARGO_DEB_VERSION) || \
		$(CARGO) install --quiet --locked cargo-deb --version $(CARGO_DEB_VERSION)
	$(CARGO) deb --manifest-path tier/Cargo.toml -p dss-tier --no-build \
		--output tier/target/debian/

# Rechecked when this file changes (a package added to the list); the Python packages
# only need the system's to be there first, not reinstalled after it.
$(STAMP_APT): Makefile
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages: $$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@mkdir -p $(VENV) && touch $@

$(STAMP_PY): pyproject.toml | $(STAMP_APT)
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all,test]'
	@touch $@

# Swift's own functional tests, which the wheel leaves out, for
# tests/integration/test_swift_functional.py: the test/ tree of the installed release's sdist
# in $(SWIFT_TESTS)/test. Fetched again only when the venv's Swift is another release.
$(STAMP_SWIFT_TESTS): $(STAMP_PY)
	@v=$$($(PY) -c 'from importlib.metadata import version; print(version("swift"))') || exit 1; \
	if [ "$$(cat $(SWIFT_TESTS)/VERSION 2>/dev/null)" != "$$v" ]; then \
		echo "fetching the functional tests of Swift $$v (its sdist)"; \
		tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		$(PY) -m pip download -q --no-deps --no-binary :all: -d "$$tmp" "swift==$$v" && \
		rm -rf $(SWIFT_TESTS) && mkdir -p $(SWIFT_TESTS) && \
		tar -xzf "$$tmp/swift-$$v.tar.gz" -C $(SWIFT_TESTS) --strip-components=1 --no-same-owner \
			"swift-$$v/test" && \
		echo "$$v" > $(SWIFT_TESTS)/VERSION || exit 1; \
	fi
	@touch $@

# The main job: the paper's caching (Figs. 7-9) and traffic-control (Figs. 10-11)
# experiments on the emulated testbed at their defaults, each printed beside the paper's
# figures (resumable: a rerun keeps what was measured).
run: setup
	$(VENV)/bin/dss experiment caching --out $(RUN_DIR)/experiment/testbed
	$(VENV)/bin/dss experiment traffic --out $(RUN_DIR)/experiment/traffic

# A short tour: an all-in-one cluster, classified uploads, classes read back.
demo: setup
	$(VENV)/bin/dss demo --dir $(RUN_DIR)/saio

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(CARGO) fmt --manifest-path tier/Cargo.toml --all --check
	@if $(CARGO) clippy --version >/dev/null 2>&1; then \
		$(CARGO) clippy --quiet --release --manifest-path tier/Cargo.toml --all-targets \
			-- -D warnings; \
	else echo "clippy skipped: $(CARGO) has none (Debian ships no clippy; rustup's has)"; fi

# `make test` checks the engine's properties on one fixed draw of cases, so that its
# verdict is the code's and not the draw's; `make properties` draws fresh ones.
PROPERTY_SEED ?= 1121
PROPERTY_RUNS ?= 20
PROPERTY_TESTS := tests/unit/test_formats.py tests/unit/test_settable_classes.py \
	tests/unit/test_classifier.py

tier-test: setup
	PROPTEST_RNG_SEED=$(PROPERTY_SEED) $(CARGO) test --release --manifest-path tier/Cargo.toml

# Property tests on fresh random cases: PROPERTY_RUNS draws of the engine's (512 cases
# each), the Python properties with 2,000 examples each, 100 random operation sequences
# per tier mode against a reference directory, and 300 random request sequences against
# a cluster. A failure prints the case;
# proptest also keeps it under tier/crates/dss-engine/proptest-regressions/.
properties: setup
	@for i in $$(seq $(PROPERTY_RUNS)); do \
		echo "engine properties, draw $$i of $(PROPERTY_RUNS)"; \
		$(CARGO) test --quiet --release --manifest-path tier/Cargo.toml -p dss-engine \
			--test props || exit 1; \
	done
	$(VENV)/bin/pytest -q --hypothesis-profile explore $(PROPERTY_TESTS)
	TIER_OPS_EXAMPLES=100 TIER_OPS_SHRINK=1 $(VENV)/bin/pytest -q --hypothesis-profile explore \
		tests/integration/test_tier_random_ops.py
	HTTP_OPS_EXAMPLES=300 HTTP_OPS_SHRINK=1 $(VENV)/bin/pytest -q --hypothesis-profile explore \
		tests/integration/test_http_random_ops.py

unit: setup
	$(VENV)/bin/pytest -q tests/unit

integration: setup
	$(VENV)/bin/pytest -q tests/integration

test: setup lint tier-test compat
	$(VENV)/bin/pytest -q -ra tests

# The servers against an older Swift release: a venv of its own (inside .venv) with the base
# install and the test tools only, so the tests needing another extra show as skipped there.
# `make compat SWIFT_OLD=VERSION` tries another release.
SWIFT_OLD ?= 2.35.1
COMPAT_VENV := $(VENV)/compat-swift-$(SWIFT_OLD)
COMPAT_TESTS := tests/unit/test_packaging.py tests/unit/test_objserver.py \
	tests/integration/test_dss_middleware.py tests/integration/test_bad_input.py \
	tests/integration/test_s3.py

$(COMPAT_VENV)/.py-stamp: pyproject.toml $(STAMP_APT)
	@[ -x $(COMPAT_VENV)/bin/python ] || python3 -m venv $(COMPAT_VENV)
	$(COMPAT_VENV)/bin/python -m pip install -q --upgrade pip
	$(COMPAT_VENV)/bin/python -m pip install -q -e '.[test]' 'swift==$(SWIFT_OLD)'
	@touch $@

compat: tier $(COMPAT_VENV)/.py-stamp
	@ln -sf $(CURDIR)/$(TIER_BIN) $(COMPAT_VENV)/bin/dss-tier
	$(COMPAT_VENV)/bin/pytest -q -ra $(COMPAT_TESTS)

bench: setup
	$(VENV)/bin/dss bench all --out $(RUN_DIR)/bench

clean:
	-$(VENV)/bin/dss saio down --dir $(RUN_DIR)/saio
	rm -rf $(RUN_DIR)
