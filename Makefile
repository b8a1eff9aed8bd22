# tape-vs-trace: every target sets up .venv itself on a fresh machine; a second run with nothing changed installs nothing.
#
# DEVICE picks the builds: cpu (PyTorch's CPU build, JAX CPU) or cuda (PyTorch's CUDA build, jax[cuda12]).
# It defaults to cuda where nvidia-smi lists a GPU; override with `make bench DEVICE=cpu`.
PYTHON ?= python3
DEVICE ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo cpu)
PIP_ARGS ?=
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(DEVICE)

.PHONY: setup test lint bench

setup: $(STAMP)

$(STAMP): pyproject.toml requirements/$(DEVICE).txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q $(PIP_ARGS) -r requirements/$(DEVICE).txt -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

lint: $(STAMP)
	$(PY) -m ruff check .

test: $(STAMP) lint
	$(PY) -m pytest -q
