"""The child process of a time-to-first-step point: `python -m implementations.first_step FRAMEWORK MODE WORKLOAD
SIZE DEVICE` runs, in a fresh process, what a user's script does up to its first gradient step, each part timed
on its own, and reports on stdout. Imports no framework before it times that import.

The parts, in the order they run (PARTS): the framework's import; the suite's harness (its modules, the framework
settings with TVT_COMPILE_CACHE's caches, the workload's numpy inputs); the backend's one-time start (the first array
on the device); the compiler's one-time start (compiled steps only: implementations.<framework>.first_step's
compiler_start); the first step (building it and its first call), split by the framework's own timers into its
compile phases and the rest (the first execution, dispatch, guards). The clock is CLOCK_MONOTONIC, which the parent
shares: the first reading, taken before any import, tells it how long the interpreter took to start. After the
first step the child prints DONE, which the parent timestamps as the end of the wait, then the record as one JSON
line. Of the measurement's own work only the recorder's set-up (clearing counters, adding listeners) lies inside
the wait, in what the parts leave unattributed; the steady call and the record come after it.
"""

import time

STARTED = time.monotonic()  # before every import: the end of the interpreter's start

import importlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

PARTS = ("import", "harness", "backend_start", "compiler_start", "first_step")
# The wall time the parts may leave unattributed (the gaps between the child's readings, the pipe to the parent):
# this share of it plus ABSOLUTE_S; a part the child left untimed is larger than that.
TOLERANCE, ABSOLUTE_S = 0.01, 0.03
DONE = "first-step-done"  # the line the child prints the moment its first step has returned
# What `import` imports: the framework as a user's script does (jax.numpy is where JAX's users start).
IMPORTS = {"torch": ("torch",), "jax": ("jax", "jax.numpy")}


def measure(framework: str, mode: str, workload: str, size: str, device: str = "cpu") -> dict:
    """Run the parts in order, timing each; the record (without the parent's readings)."""
    clock = time.monotonic
    seconds: dict[str, float] = {}
    if framework not in IMPORTS:
        raise ValueError(f"unknown framework {framework!r}; valid choices: {', '.join(IMPORTS)}")
    start = clock()
    for module in IMPORTS[framework]:
        importlib.import_module(module)
    seconds["import"] = clock() - start

    start = clock()
    side = importlib.import_module(f"implementations.{framework}.first_step")
    side.check_mode(mode)
    from implementations import frameworks, workloads

    frameworks.load(framework)
    inputs = workloads.make_inputs(workload, size)
    seconds["harness"] = clock() - start

    start = clock()
    backend = side.backend_start(device)
    seconds["backend_start"] = clock() - start

    start = clock()
    compiler = side.compiler_start(device) if mode == "compiled" else {}
    seconds["compiler_start"] = clock() - start

    with side.recorder() as read:
        start = clock()
        step = side.grad_step(inputs, mode, device)
        step()
        seconds["first_step"] = clock() - start
        print(DONE, flush=True)
        recorded = read()
    start = clock()
    step()
    steady = clock() - start
    return {"started": STARTED, "seconds": seconds, "phases": recorded["phases"], "cache_reads": recorded["cache"],
            "steady_step_s": steady, "start": {**backend, **compiler}, "cache_settings": side.cache_settings()}


def main(argv: list[str]) -> int:
    """Measure one point and print its record; bad input is one line on stderr and exit status 2."""
    if len(argv) != 5:
        print("usage: python -m implementations.first_step FRAMEWORK MODE WORKLOAD SIZE DEVICE", file=sys.stderr)
        return 2
    try:
        record = measure(*argv)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
