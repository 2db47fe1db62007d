# The README's two set-up commands: `make run` and `make test`. Each creates .venv when it is
# missing and installs the project into it; nothing else needs to be on the machine first.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
STORE   ?= $(or $(AUDITATLAS_STORE),data/store)
PORT    ?= 8501

.PHONY: run test install browser bench clean-store

# Python caches the bytecode it compiles (its default), in every process these targets start:
# PYTHONDONTWRITEBYTECODE, set on this machine, made every process of the suite (workers,
# servers, command-line runs) compile each module it imported again.
unexport PYTHONDONTWRITEBYTECODE

install: $(STAMP)

$(STAMP): pyproject.toml
	@# The venv without a pip of its own (ensurepip was most of making it): uv goes in by the
	@# system's pip (`pip --python`, pip 22.3 and later), or, without one, by the venv's pip
	@# bootstrapped then.
	@test -x $(PY) || python3 -m venv --without-pip $(VENV)
	@# uv installs the same resolution as pip about ten times faster here (15 s against 104 s
	@# on a fresh venv): most of a fresh clone's `make test` used to be the install. Bytecode is
	@# not compiled at install (uv's --compile-bytecode compiled every installed module, most of
	@# them never imported, and was most of the install): Python caches each module the first
	@# time a process imports it (bench/README.md, the test suite).
	@python3 -m pip --python $(PY) install --quiet 'uv>=0.5' 2>/dev/null || \
	  { $(PY) -m pip --version >/dev/null 2>&1 || $(PY) -m ensurepip --default-pip >/dev/null; \
	    $(PY) -m pip install --quiet 'uv>=0.5'; }
	$(VENV)/bin/uv pip install --quiet --python $(PY) -e '.[dev]'
	@touch $(STAMP)

# Serves the app on the embedded default corpus (built on first run; offline).
run: $(STAMP)
	@test -f $(STORE)/MANIFEST.json || $(VENV)/bin/auditatlas --store $(STORE) demo
	AUDITATLAS_STORE=$(STORE) $(PY) -m components.serve --server.port $(PORT) --server.headless true

# The browser tests drive Debian's Chromium; install it when it is missing (root, apt).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "warning: could not install chromium; browser tests will fail"; }

# Three pytest workers on this 2-core machine: the browser, receiver and judge tests spend much of
# their time waiting (a page settling, a timeout, a killed process), and a third worker keeps both
# cores busy meanwhile (about 295 s against 320 s with two here, idle). The stores the tests read
# are built once and shared (tests/stores.py).
TEST_WORKERS ?= 3
test: $(STAMP) browser
	@# The project's own modules compiled once up front (0.5 s), and the test modules' rewritten
	@# asserts cached (tests/assertion_cache.py): the workers start at one moment and would each
	@# compile and rewrite them all before any of them had cached one.
	@$(PY) -m compileall -q -j 0 auditatlas queries components pages app.py tests >/dev/null
	@$(PY) tests/assertion_cache.py
	@# The rules a tool can check, checked before the suite: the code (ruff) and the layers
	@# (import-linter's contracts in pyproject.toml).
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

bench: $(STAMP)
	$(PY) bench/run.py

clean-store:
	rm -rf $(STORE)
