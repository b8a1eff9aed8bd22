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

.PHONY: setup test lint bench report preview

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

# The main job: the whole asv suite on this machine (CPU sizes here, GPU sizes where there is a GPU), saved to
# results/<machine>/ for the committed HEAD, then the report in results/report/ and the dashboard in html/.
# A failed benchmark is recorded as failed and the run goes on; bench then exits with asv's status.
# ASV_ARGS passes options on (e.g. ASV_ARGS='-b remat' for one pillar).
ASV_ARGS ?=
bench: $(STAMP)
	@test -z "$$(git status --porcelain -- implementations benchmarks asv.conf.json)" || \
		{ echo "error: commit implementations/, benchmarks/ and asv.conf.json first: results are recorded under HEAD"; exit 1; }
	@machine=$$(TVT_DEVICE=$(DEVICE) $(VENV)/bin/tape-vs-trace machine) && echo "machine: $$machine" && status=0 && \
	{ TVT_DEVICE=$(DEVICE) $(VENV)/bin/asv run --set-commit-hash $$(git rev-parse HEAD) \
		-E existing:$(abspath $(PY)) --machine $$machine --launch-method spawn --show-stderr $(ASV_ARGS) || status=$$?; } && \
	$(VENV)/bin/tape-vs-trace scrub-results results && \
	$(VENV)/bin/tape-vs-trace report --results results --out results/report --readme README.md && \
	$(VENV)/bin/asv publish && \
	if [ $$status -ne 0 ]; then echo "warning: asv exited with status $$status (failed benchmarks above); results were saved"; fi && \
	exit $$status

# The report alone, from the results already in results/.
report: $(STAMP)
	$(VENV)/bin/tape-vs-trace report --results results --out results/report --readme README.md

# Serve the dashboard built by `make bench` (asv publish) at http://127.0.0.1:8080.
preview: $(STAMP)
	$(VENV)/bin/asv preview
