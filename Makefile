# The README's two commands: `make demo` and `make test`. Both start from a
# fresh clone: they create .venv with $(PYTHON) (3.10 or newer for the demo,
# 3.11 or newer for the tests) and install what they need into it.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Plug-in distributions (later issues) are installed and checked when present.
# backends/docmem-s3 (agent-docmem-s3) goes first: agent-docmem-fsspec's [s3] and [test]
# extras need it, and pip takes the local copy only when it is named before the
# distribution that requires it.
FOUND    := $(patsubst %/pyproject.toml,%,$(wildcard backends/*/pyproject.toml))
BACKENDS := $(filter backends/docmem-s3,$(FOUND)) $(filter-out backends/docmem-s3,$(FOUND))
PACKAGES := docmem $(foreach b,$(BACKENDS),$(wildcard $(b)/docmem_*))

.PHONY: demo test check lint typecheck pytest crewai-tests bench bench-peers install clean

# CrewAI pins openai 2.x and mcp 1.x, which the other frameworks' pins exclude, and
# weighs about 1 GB: its adapter is type-checked and tested in a venv of its own. The venv
# lives under ~/.cache, named by a hash of what goes into it (constraints-crewai.txt and
# pyproject.toml), so a fresh clone on the same machine reuses it; docmem itself is
# imported from this checkout (PYTHONPATH), never from the copy installed there.
CREWAI_KEY  := $(shell cat constraints-crewai.txt pyproject.toml | sha256sum | cut -c1-16)
CREWAI_VENV ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/docmem/venv-crewai-$(CREWAI_KEY)
CREWAI_RUN  := PYTHONPATH=$(CURDIR) $(CREWAI_VENV)/bin/python

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.core: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

# The framework adapters' tests (docmem.integrations) run on every `make test`, and
# Pydantic AI and LangChain need Python 3.11: refuse an older venv rather than skip them.
$(VENV)/.dev: $(BIN)/python pyproject.toml constraints.txt $(wildcard backends/*/pyproject.toml)
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "make test needs Python 3.11 or newer for the framework adapters' tests;" \
		"$(VENV) has $$($(BIN)/python -V). Run: make clean && make PYTHON=python3.11 test"; exit 1; }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]' \
		$(foreach b,$(BACKENDS),-e './$(b)[test]')
	touch $(VENV)/.core $@

install: $(VENV)/.dev

# Built beside its final name and moved there whole, so a run that stops half-way (or
# another run building the same venv) never leaves a broken one behind. Only `python -m`
# is used in it: the scripts' first lines would name the temporary directory.
$(CREWAI_VENV)/.ready:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "the CrewAI tests need Python 3.11 or newer: make PYTHON=python3.11 test"; exit 1; }
	rm -rf $(CREWAI_VENV).partial
	$(PYTHON) -m venv $(CREWAI_VENV).partial
	$(CREWAI_VENV).partial/bin/python -m pip install --quiet --disable-pip-version-check \
		-c constraints-crewai.txt '.[crewai,test]' mypy types-tqdm
	touch $(CREWAI_VENV).partial/.ready
	test -e $(CREWAI_VENV)/.ready || { rm -rf $(CREWAI_VENV); mv -T $(CREWAI_VENV).partial $(CREWAI_VENV); }
	rm -rf $(CREWAI_VENV).partial
	@# Older keys' venvs (about 1 GB each), unless one was made in the last hour (another run's).
	find $(dir $(CREWAI_VENV)) -maxdepth 1 -name 'venv-crewai-*' ! -name '$(notdir $(CREWAI_VENV))' \
		-mmin +60 -exec rm -rf {} +

## make demo: the scripted two-session agent on the default store file://./.docmem
demo: $(VENV)/.core
	$(BIN)/python examples/quickstart.py

## make test: lint, type-check and run every test (what .ci/run calls)
test: lint typecheck pytest

## make check: the inner loop: lint and every core test that starts no process, needs no
## server and runs no long campaign (the markers in pyproject.toml); make test runs them all
CHECK_MARKERS := not process and not slow and not integration
check: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/python -m pytest tests -q -m "$(CHECK_MARKERS)" $(PYTEST_ARGS)

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# CrewAI's modules are type-checked in its venv, by crewai-tests (pyproject.toml excludes them here).
typecheck: $(VENV)/.dev
	$(BIN)/mypy --strict $(PACKAGES)
	$(BIN)/mypy --strict examples benchmarks

# One pytest run per distribution (plug-ins' test modules may share names with the
# core's). Plug-in tests talk to real servers: scripts/with-test-servers starts
# LocalStack, SeaweedFS, Azurite and fake-gcs-server on 127.0.0.1 while the core's tests
# and then CrewAI's run (they need none), then runs the plug-ins' suites, and stops the
# servers, also on failure. The operator console's tests drive Debian's chromium, which
# scripts/chromium installs with apt-get when it is missing; DOCMEM_REQUIRE_BROWSER=1
# makes a missing browser a failure, never a skip.
pytest: $(VENV)/.dev
	scripts/chromium >/dev/null
ifneq ($(BACKENDS),)
	DOCMEM_REQUIRE_BROWSER=1 scripts/with-test-servers \
		--meanwhile '$(BIN)/python -m pytest tests $(PYTEST_ARGS) && $(MAKE) --no-print-directory crewai-tests' \
		env DOCMEM_REQUIRE_SERVERS=1 sh -c \
		'for b in $(BACKENDS); do $(BIN)/python -m pytest "$$b/tests" $(PYTEST_ARGS) || exit 1; done'
else
	DOCMEM_REQUIRE_BROWSER=1 $(BIN)/python -m pytest tests $(PYTEST_ARGS)
	$(MAKE) --no-print-directory crewai-tests
endif

## make crewai-tests: the CrewAI adapter's type check and tests, in CrewAI's venv (make test
## runs it after the core's tests, while the servers start)
crewai-tests: $(CREWAI_VENV)/.ready
	$(CREWAI_RUN) -m mypy --strict docmem/integrations/crewai.py docmem/testing/crewai_model.py \
		examples/with_crewai.py
	$(CREWAI_RUN) -m pytest tests/crewai_adapter $(PYTEST_ARGS)

## make bench: the benchmarks, printed as ratios against raw baselines
bench: $(VENV)/.dev
	$(BIN)/python benchmarks/local.py
	$(BIN)/python benchmarks/telemetry.py
	$(BIN)/python benchmarks/startup.py
	$(BIN)/python benchmarks/prompt_cache.py
	$(BIN)/python benchmarks/console.py
	scripts/with-test-servers sh -c '$(BIN)/python benchmarks/s3.py && $(BIN)/python benchmarks/azure_blob.py && $(BIN)/python benchmarks/gcs.py && $(BIN)/python benchmarks/hot_scope.py && $(BIN)/python benchmarks/fsspec_store.py && $(BIN)/python benchmarks/adapters.py && $(BIN)/python benchmarks/encryption.py && $(BIN)/python benchmarks/transfer.py && $(BIN)/python benchmarks/provenance.py && $(BIN)/python benchmarks/mcp_load.py'
	$(MAKE) --no-print-directory $(CREWAI_VENV)/.ready
	$(CREWAI_RUN) benchmarks/adapters.py    # CrewAI's file:// row, in its venv (no docmem-s3 there)
	$(CREWAI_RUN) benchmarks/prompt_cache.py    # CrewAI's rows, in its venv

## make bench-peers: docmem beside LangGraph, Pydantic AI Harness and Anthropic's memory
## tool, in their own venv (PEERS_ARGS=--quick for a smoke run; not part of make test)
PEERS_VENV ?= .venv-peers

$(PEERS_VENV)/.installed: benchmarks/peers-requirements.txt pyproject.toml backends/docmem-s3/pyproject.toml
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		-r benchmarks/peers-requirements.txt -e . -e ./backends/docmem-s3
	touch $@

bench-peers: $(PEERS_VENV)/.installed
	scripts/with-test-servers $(PEERS_VENV)/bin/python benchmarks/peers.py $(PEERS_ARGS)

clean:
	rm -rf $(VENV) $(PEERS_VENV) $(CREWAI_VENV) .docmem .pytest_cache .mypy_cache .ruff_cache .hypothesis \
		localstack/.venv scripts/.venv
