# tape-vs-trace: every target sets up .venv itself on a fresh machine; a second run with nothing changed installs nothing.
#
# DEVICE picks the builds: cpu (PyTorch's CPU build, JAX CPU) or cuda (PyTorch's CUDA build and the jax CUDA plugin
# that matches torch's CUDA major version, from scripts/jax_cuda.py). It defaults to cuda where nvidia-smi lists a
# GPU; override with `make bench DEVICE=cpu`.
# TVT_OFFLINE=1 (or, for DEVICE=cuda, a $(PYTHON) that already has torch with CUDA and jax with a CUDA plugin) sets
# up without network: scripts/setup_offline.sh reuses the installed torch and jax.
PYTHON ?= python3
DEVICE ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo cpu)
PIP_ARGS ?=
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(DEVICE)

.PHONY: setup test test-all lint bench compile-series report preview mutate mutate-sample

setup: $(STAMP)

TVT_OFFLINE ?= $(shell [ "$(DEVICE)" = cuda ] && $(PYTHON) scripts/jax_cuda.py --preinstalled >/dev/null 2>&1 \
	&& echo 1 || echo 0)

$(STAMP): pyproject.toml requirements/$(DEVICE).txt
ifeq ($(TVT_OFFLINE),1)
	PYTHON=$(PYTHON) DEVICE=$(DEVICE) scripts/setup_offline.sh
else
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q $(PIP_ARGS) -r requirements/$(DEVICE).txt -e '.[dev]'
	@if [ "$(DEVICE)" = cuda ]; then $(PY) -m pip install --disable-pip-version-check -q $(PIP_ARGS) \
		"$$($(PY) scripts/jax_cuda.py)"; fi
	@rm -f $(VENV)/.installed-*
	@touch $@
endif

lint: $(STAMP)
	$(PY) -m ruff check .

# `make test` is what CI runs (the 5-minute goal), one pytest worker per core (pytest-xdist), a test file per
# worker so module fixtures and cached references are built once; tests marked slow (over ~5 s each: every compiled
# variant, failure isolation through asv, the GPU script's faked chunk runs, the shared count subprocesses) run in
# `make test-all`, one process, as a timing test there needs the host to itself. The offline set-up test stays in
# `make test`.
test: $(STAMP) lint
	$(PY) -m pytest -q -m "not slow" -n auto --dist loadfile

test-all: $(STAMP) lint
	$(PY) -m pytest -q

# The main job: the asv suite (its PROFILE) on this machine (CPU sizes here, GPU sizes where there is a GPU), saved to
# results/<machine>/ for the committed HEAD; then the paired comparisons and the remat trade-off curve divided from
# those samples (tape-vs-trace paired, results/paired/), the report in results/report/ and the dashboard in html/.
# PROFILE picks what the worker runner measures (tape_vs_trace/running/profiles.py): `cited` (the default on CPU machines:
# the rows the report cites first and every count, 12 rounds, each round after the third started only while the
# runner's budget has room for it: the 10 minutes less what the side steps cost here last time, CLOCK below) or `full` (the default on CUDA machines: every
# benchmark, 5 rounds; on CPU machines with the distributed steps, about an hour on a 2-core host).
# RUNNER picks who runs the asv suite: `worker` (default: tape-vs-trace run, per framework and round one process
# for the compiled combinations and one for the others, under the budget a cheap one again in its round;
# ROUNDS overrides the profile's rounds, a cold compile keeps its own 3) or `asv` (asv run, one process per
# combination and round: the reference path, full isolation, several times slower; its rounds are each benchmark's,
# and it runs what ASV_ARGS selects, the whole suite without it, whatever the profile).
# A failed benchmark is recorded as failed and the run goes on; bench then exits with the runner's status.
# ASV_ARGS passes options on to the runner (e.g. ASV_ARGS='-b remat' for one pillar, which replaces the profile's
# selection).
PROFILE ?= $(if $(filter cuda,$(DEVICE)),full,cited)
RUNNER ?= worker
ROUNDS ?=
# Then the distributed steps (tape-vs-trace distributed: every form, mode and N of the grid, the ranks on the GPUs
# where there are at least 2, else on the CPU), the longest part on a 2-core host; DISTRIBUTED=0 leaves them out,
# DISTRIBUTED_ARGS passes options (e.g. --ranks 1,2,4).
# Off by default on a CUDA machine with fewer than 2 GPUs (nvidia-smi -L): its ranks would run on the host's CPU;
# on a CPU machine on in the full profile only (the steps take most of its hour).
GPU_COUNT = $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
DISTRIBUTED ?= $(if $(filter cuda,$(DEVICE)),$(if $(filter-out 0 1,$(GPU_COUNT)),1,0),$(if $(filter full,$(PROFILE)),1,0))
DISTRIBUTED_ARGS ?=
# Then the time to a first gradient step (tape-vs-trace first-step, docs/compile-time.md): each framework's compiled
# step with empty and with warm caches and its eager step, each from a fresh interpreter, 3 processes per point, the
# chain at depth 8 (about 2 minutes on a 2-core host, 3 under load: the cited profile's budget is that much
# smaller); FIRST_STEP=0 leaves it out, FIRST_STEP_ARGS passes options (e.g. '--profile full --processes 5': the
# chain's and the transformer's depth series).
FIRST_STEP ?= 1
FIRST_STEP_ARGS ?=
# On a CPU machine, the CPU peaks by one method on both sides (tape-vs-trace native-peak, results/native-peak/), the
# compile caches of the run reused: in the cited profile the mlp's gradient step under torch.compile and jax.jit, one
# process each (a ratio, no interval: the budget's share); in the full profile every selection (the checked steps,
# the remat curve, the pillars, the LSTM's scan and loop), 3 processes per case for an interval (over an hour on a
# 2-core host). NATIVE_PEAK_ARGS replaces the selection (e.g. '--select curve --processes 3').
NATIVE_PEAK_ARGS ?= $(if $(filter full,$(PROFILE)),--select check curve pillars formulations --processes 3,\
	--select bench --processes 1)
# First the host's calibration (matmul rate, copy bandwidth, dispatch cost): scrub-results stores it with every
# result (the report's roofline divides by its one matmul rate).
ASV_ARGS ?=
CALIBRATION := $(abspath .asv/calibration.json)
# Both frameworks' persistent compilation caches (Inductor's, JAX's) for the runner and the paired costs, one
# subfolder each; their state before the run (entries, "warm" or "cold") goes into every result file.
COMPILE_CACHE := $(abspath .asv/compile-cache)
COMPILE_CACHE_STATE := $(abspath .asv/compile-cache-state.json)
# make bench's one clock (tape_vs_trace/running/bench_clock.py): the worker runner's budget is the 10-minute goal less what
# the target spent before it and the side steps' last recorded costs after it, on this machine in this profile
# (the profile's own budget before anything is recorded); each side step records its wall time there.
CLOCK := $(PY) -m tape_vs_trace.running.bench_clock $(abspath .asv/bench-clock.json)
# Said before the report runs: README.md is a tracked file, and its results block changes under the user's feet.
REPORT_NOTE := rewriting README.md's results block (between its report markers) and results/report/
# Every tracked path whose content measures or records a result (the suite, the implementations, the runners and
# the report, the scripts, the pins, the configurations, this file): bench refuses to run while one differs from
# HEAD, as results are recorded under HEAD. tests/test_makefile.py checks each tracked file is here or not measuring.
RECORDED_SOURCES := Makefile asv.conf.json asv.matrix.conf.json benchmarks implementations pyproject.toml \
	requirements scripts tape_vs_trace
bench: $(STAMP)
	@test -z "$$(git status --porcelain -- $(RECORDED_SOURCES))" || \
		{ echo "error: commit $(RECORDED_SOURCES) first: results are recorded under HEAD"; exit 1; }
	@if [ "$(DEVICE)" = cuda ] && [ "$(PROFILE)" = full ]; then $(PY) scripts/gpu_chunks.py estimate --summary --runner $(RUNNER) \
		$(if $(wildcard .asv/preflight.json),--costs .asv/preflight.json) || true; fi
	@machine=$$(TVT_DEVICE=$(DEVICE) $(VENV)/bin/tape-vs-trace machine) && echo "machine: $$machine" && status=0 && \
	$(CLOCK) start $$machine $(PROFILE) && \
	TVT_DEVICE=$(DEVICE) $(VENV)/bin/tape-vs-trace calibrate --out $(CALIBRATION) && \
	TVT_COMPILE_CACHE=$(COMPILE_CACHE) $(PY) -m tape_vs_trace.results.compile_caches $(COMPILE_CACHE_STATE) && \
	budget="$(if $(filter worker,$(RUNNER)),$$($(CLOCK) budget $(PROFILE)))" && \
	{ TVT_DEVICE=$(DEVICE) TVT_INPUT_CACHE=$(abspath .asv/inputs) TVT_COMPILE_CACHE=$(COMPILE_CACHE) \
		TVT_CALIBRATION=$(CALIBRATION) TVT_COMPILE_CACHE_STATE=$(COMPILE_CACHE_STATE) \
		$(if $(filter asv,$(RUNNER)),$(VENV)/bin/asv run --set-commit-hash $$(git rev-parse HEAD) \
		-E existing:$(abspath $(PY)) --machine $$machine --launch-method spawn --record-samples --show-stderr,\
		$(VENV)/bin/tape-vs-trace run --machine $$machine --profile $(PROFILE) $(if $(ROUNDS),--rounds $(ROUNDS)) \
		$$budget) $(ASV_ARGS) || status=$$?; } && \
	TVT_CALIBRATION=$(CALIBRATION) TVT_COMPILE_CACHE_STATE=$(COMPILE_CACHE_STATE) \
		$(CLOCK) step scrub -- $(VENV)/bin/tape-vs-trace scrub-results results && \
	TVT_DEVICE=$(DEVICE) $(CLOCK) step saved -- $(VENV)/bin/tape-vs-trace saved-all --out results/saved && \
	$(if $(filter cpu,$(DEVICE)),{ TVT_COMPILE_CACHE=$(COMPILE_CACHE) $(CLOCK) step native-peak -- \
		$(VENV)/bin/tape-vs-trace native-peak --out results/native-peak $(NATIVE_PEAK_ARGS) || \
		echo "warning: no CPU native peaks (above)"; } &&,) \
	{ TVT_DEVICE=$(DEVICE) TVT_INPUT_CACHE=$(abspath .asv/inputs) TVT_COMPILE_CACHE=$(COMPILE_CACHE) \
		$(CLOCK) step paired -- $(VENV)/bin/tape-vs-trace paired --results results --out results/paired || \
		echo "warning: no paired comparisons (above): they divide tape-vs-trace run's samples"; } && \
	$(if $(filter 0,$(FIRST_STEP)),echo "skipped the time to first step (FIRST_STEP=0)",\
		{ TVT_DEVICE=$(DEVICE) $(CLOCK) step first-step -- \
		$(VENV)/bin/tape-vs-trace first-step --out results/first_step $(FIRST_STEP_ARGS) || \
		echo "warning: no time-to-first-step results (above)"; }) && \
	$(if $(filter 0,$(DISTRIBUTED)),echo "skipped the distributed steps (DISTRIBUTED=0)",\
		{ $(CLOCK) step distributed -- $(VENV)/bin/tape-vs-trace distributed --out results/distributed \
		$(DISTRIBUTED_ARGS) || \
		echo "warning: the distributed steps above did not all run; their measured rows were saved"; }) && \
	echo "$(REPORT_NOTE)" && \
	$(CLOCK) step report -- $(VENV)/bin/tape-vs-trace report --results results --out results/report \
		--readme README.md && \
	$(CLOCK) step publish -- $(VENV)/bin/tape-vs-trace publish --results results --out html && \
	if [ $$status -ne 0 ]; then echo "warning: the $(RUNNER) runner exited with status $$status (failed benchmarks above); results were saved"; fi && \
	exit $$status

# The compile-time depth series alone (recording.CompilePhases_*, docs/compile-time.md): every depth of this
# device's series, each formulation, both frameworks, the cold cache, the processes per point the benchmark declares,
# measured as bench measures (machine record, calibration, the runner, scrub) and merged into HEAD's result file
# beside the rows bench wrote there, which stay; then the report. scripts/compile_series.py prints the plan and its
# estimate first and refuses one over its budget; a rerun runs only the points the file lacks. SERIES_ARGS narrows
# or re-runs it (e.g. '--workload chain --framework jax --depth 8', '--again', '--budget 900'); SERIES_RESULTS
# puts it into another folder (its report beside it, README.md untouched).
SERIES_RESULTS ?= results
SERIES_ARGS ?=
compile-series: $(STAMP)
	@test -z "$$(git status --porcelain -- $(RECORDED_SOURCES))" || \
		{ echo "error: commit $(RECORDED_SOURCES) first: results are recorded under HEAD"; exit 1; }
	@machine=$$(TVT_DEVICE=$(DEVICE) $(VENV)/bin/tape-vs-trace machine) && echo "machine: $$machine" && status=0 && \
	TVT_DEVICE=$(DEVICE) $(PY) scripts/compile_series.py --plan --machine $$machine --results $(SERIES_RESULTS) \
		$(SERIES_ARGS) && \
	TVT_DEVICE=$(DEVICE) $(VENV)/bin/tape-vs-trace calibrate --out $(CALIBRATION) && \
	TVT_COMPILE_CACHE=$(COMPILE_CACHE) $(PY) -m tape_vs_trace.results.compile_caches $(COMPILE_CACHE_STATE) && \
	{ TVT_DEVICE=$(DEVICE) TVT_INPUT_CACHE=$(abspath .asv/inputs) TVT_COMPILE_CACHE=$(COMPILE_CACHE) \
		TVT_CALIBRATION=$(CALIBRATION) TVT_COMPILE_CACHE_STATE=$(COMPILE_CACHE_STATE) \
		$(PY) scripts/compile_series.py --machine $$machine --results $(SERIES_RESULTS) $(SERIES_ARGS) \
		|| status=$$?; } && \
	TVT_CALIBRATION=$(CALIBRATION) TVT_COMPILE_CACHE_STATE=$(COMPILE_CACHE_STATE) \
		$(VENV)/bin/tape-vs-trace scrub-results $(SERIES_RESULTS) && \
	$(VENV)/bin/tape-vs-trace report --results $(SERIES_RESULTS) --out $(SERIES_RESULTS)/report \
		$(if $(filter results,$(SERIES_RESULTS)),--readme README.md) && \
	exit $$status

# The report alone, from the results already in results/.
report: $(STAMP)
	@echo "$(REPORT_NOTE)"
	$(VENV)/bin/tape-vs-trace report --results results --out results/report --readme README.md

# Serve the dashboard built by `make bench` (asv publish) at http://127.0.0.1:8080.
preview: $(STAMP)
	$(VENV)/bin/asv preview

# Mutation testing (not in CI; configured in pyproject.toml [tool.mutmut]): mutates the measurement code (the probes,
# the steps, the report's statistics, loading and ratio rule) under mutants/ (git-ignored) and runs the covering fast
# tests against each mutant. Run it niced and one group at a time, e.g.
#   nice -n 15 make mutate MUTATE_PATHS='tape_vs_trace/report/stats.py tape_vs_trace/report/hosts.py'
# (paths become mutmut's mutant-name globs, tape_vs_trace.report.stats.*; a named group is re-tested in full, a run
# without MUTATE_PATHS resumes where the last one stopped). Then `mutmut results`, `mutmut show NAME`.
# Cost on a shared 2-core machine: the first run traces the selected tests once (minutes), later runs trace only
# new tests; report mutants are fast, probe and steps mutants far slower (they run torch and JAX tests). All of them
# take hours: see CONTRIBUTING.md "Mutation testing" for the sampled score.
MUTATE_PATHS ?=
MUTATE_CHILDREN ?= 2
mutate: $(STAMP)
	$(VENV)/bin/mutmut run --max-children $(MUTATE_CHILDREN) \
		$(foreach p,$(MUTATE_PATHS),'$(subst /,.,$(basename $(p))).*')

# The score that fits in a session: every MUTATE_EVERY-th mutant of each mutated file (scripts/mutate_sample.py),
# run by mutmut and scored per file into mutants/sample-score.md, survivors listed by name; the sampled mutants no
# selected test reaches then run against the tests outside mutmut's selection (--outside). About an hour here.
MUTATE_EVERY ?= 20
mutate-sample: $(STAMP)
	$(PY) scripts/mutate_sample.py --every $(MUTATE_EVERY) --children $(MUTATE_CHILDREN) --outside
