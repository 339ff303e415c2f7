# swift-dss: `make run` sets everything up and runs the main job; `make test` runs every test.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP_APT := $(VENV)/.apt-stamp
STAMP_PY := $(VENV)/.py-stamp
APT_PACKAGES := memcached fuse3 libfuse3-dev pkg-config rsync sqlite3 curl \
	libcurl4-openssl-dev libssl-dev
RUN_DIR ?= $(CURDIR)/run

.PHONY: setup run test lint unit integration bench clean

setup: $(STAMP_APT) $(STAMP_PY)

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

run: setup
	$(VENV)/bin/dss demo --dir $(RUN_DIR)/saio

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

unit: setup
	$(VENV)/bin/pytest -q tests/unit

integration: setup
	$(VENV)/bin/pytest -q tests/integration

test: setup lint
	$(VENV)/bin/pytest -q -ra tests

bench: setup
	$(VENV)/bin/dss bench all --out $(RUN_DIR)/bench

clean:
	-$(VENV)/bin/dss saio down --dir $(RUN_DIR)/saio
	rm -rf $(RUN_DIR)
