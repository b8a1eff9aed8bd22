"""`tape-vs-trace native-peak`: one CPU peak-memory method for both frameworks in every mode, as data beside the asv
results (results/native-peak/<machine>-<commit8>.csv).

Each (framework, case) is measured in a fresh process (`python -m tape_vs_trace.side.native_peaks --measure ...`, under
PYTHONMALLOC=malloc) by implementations.native_peak: memray's native heap peak of one call after the warm-ups,
above the live bytes at its start. The same process then records, beside it, the step's analytic bounds (the GPU
check's: tape_vs_trace.side.gpucheck.bounds, from the resident, saved and returned bytes), the value of the method the
asv suite uses for that framework on a CPU where it sees the step (PyTorch's live-storage tracker outside
torch.compile, XLA's buffer plan for jax.jit), and the step's time with and without the tracker.

Selections: `check` (the GPU check's workloads, gradient step, eager and compiled, bounds checked), `bench` (its
first workload, torch.compile against jax.jit: what make bench runs on a CPU machine), `curve` (every point of the
CPU remat trade-off curve at its first size, torch.compile's budgets included), `pillars` (no-grad inference,
the custom backward, transforms) and `formulations` (the gradient steps recording.GradStep_* runs, both
formulations, of each workload whose PyTorch module has a scan form: the LSTM's loop op by op, its scan compiled).
Ratios are formed by rowkey.like alone: a row records its mode and method, so an eager tape is never divided by a
jitted program.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from implementations import experiments, frameworks, workloads
from implementations.native_peak import NativePeak
from tape_vs_trace.progress import Step, quiet
from tape_vs_trace.results.native_peak_rows import NativePeakError, read, write
from tape_vs_trace.side import gpucheck

ROOT = Path(__file__).resolve().parents[1]
SELECTIONS = ("check", "bench", "curve", "pillars", "formulations")
TIMED_CALLS = 5


@dataclass(frozen=True)
class Case:
    """One step of one framework's: what implementations.<framework>.steps builds from it."""

    workload: str
    size: str
    kind: str = "grad"  # grad (grad_step), forward (forward_step), transform (transform_step)
    variant: str = "plain"
    mode: str = "eager"
    formulation: str = ""
    attention: str = ""
    budget: str = ""  # torch.compile's activation memory budget, as text ('' for none)
    transform: str = ""

    def argv(self) -> list[str]:
        return [json.dumps(asdict(self))]


def _program(workload: str, attention: str = "") -> tuple[str | None, str | None]:
    """The matched style and written attention (the GPU check's program), or the case's attention."""
    spec = workloads.spec(workload)
    return ("matched" if spec.styles else None), ((attention or "written") if spec.attentions else None)


def selection(name: str, device: str = "cpu") -> list[tuple[str, Case]]:
    """(framework, case) of a named selection, both frameworks' cases in turn."""
    if name in ("check", "bench"):
        found = [(fw, Case(w, size, mode=mode, formulation=gpucheck.formulation_of(w) or ""))
                 for w, size in gpucheck.cases(device) for mode in ("eager", "compiled") for fw in frameworks.NAMES]
        # make bench's share of its 10 minutes: the first workload of the check (the mlp), compiled on both sides
        return found if name == "check" else [(fw, case) for fw, case in found
                                               if case.workload == found[0][1].workload and case.mode == "compiled"]
    if name == "curve":
        remat = [e for e in experiments.experiments(device) if e.group == "remat" and not e.attention]
        first = {e.workload: e.size for e in reversed(remat)}  # the curve's first size per workload
        return [(e.framework, Case(e.workload, e.size, variant=p.variant, mode=p.mode, formulation=e.formulation,
                                   budget="" if p.budget is None else f"{p.budget:g}"))
                for e in remat if e.size == first[e.workload] for p in e.points]
    if name == "pillars":
        size, small = "64x256x1024", "16x64x256"
        cases = [(fw, Case("mlp", size, kind="forward", mode=m)) for fw in frameworks.NAMES
                 for m in ("no_grad", "compiled")]
        cases += [(fw, Case("swiglu", size, variant=v, mode=m)) for m in ("eager", "compiled")
                  for v in ("plain", "custom") for fw in frameworks.NAMES]
        cases += [(fw, Case("mlp", small, kind="transform", mode=m, transform=t)) for t in ("grad", "hvp_fwd_rev")
                  for m in ("eager", "compiled") for fw in frameworks.NAMES
                  if frameworks.transform_skip(fw, t, m, device) is None]
        return cases
    if name == "formulations":
        return _formulations(device)
    raise NativePeakError(f"unknown selection {name!r}; valid choices: {', '.join(SELECTIONS)}")


def _formulations(device: str) -> list[tuple[str, Case]]:
    """The asv suite's own gradient-step pairs (profiles.combinations, its skips applied) of the workloads where
    PyTorch runs a scan too, float32 at full precision: so the scan and the loop each pair like with like."""
    from tape_vs_trace.running import profiles

    steps = [dict(c.params) for c in profiles.combinations()
             if c.benchmark.startswith("recording.GradStep_") and not c.skipped]
    steps = [p for p in steps if p["device"] == device and p["dtype"] == "float32" and p["precision"] == "highest"]
    scan = {p["workload"] for p in steps if p["framework"] == "torch" and p.get("formulation") == "scan"}
    return [(p["framework"], Case(p["workload"], p["size"], mode=p["mode"], formulation=p["formulation"]))
            for p in steps if p["workload"] in scan]


def _step(fw: frameworks.Loaded, case: Case, inputs: workloads.Inputs, device: str):
    formulation = case.formulation or None
    if case.kind == "forward":
        return fw.steps.forward_step(inputs, case.variant, case.mode, device, formulation)
    if case.kind == "transform":
        module = importlib.import_module(f"implementations.{fw.name}.transform_steps")
        return module.transform_step(inputs, case.transform, case.mode, device)
    budget = float(case.budget) if case.budget else None
    return fw.steps.grad_step(inputs, case.variant, case.mode, device, formulation, budget)


def _other_method(fw: frameworks.Loaded, case: Case, inputs: workloads.Inputs, step, device: str):
    """The asv suite's CPU peak of the same step, where its method sees it (PeakBytes or None): PyTorch's storage
    tracker outside torch.compile (it cannot see into Inductor's kernels), XLA's buffer plan of a jitted gradient."""
    if fw.name == "torch" and case.mode != "compiled":
        return fw.probe.peak_bytes(step)
    if fw.name == "jax" and case.mode == "compiled" and case.kind == "grad":
        fn, args = fw.steps.grad_fn(inputs, case.variant, device, case.formulation or None)
        return fw.probe.peak_bytes(fn, *args)
    return None


def _accounting(fw: frameworks.Loaded, case: Case, inputs: workloads.Inputs, out, device: str) -> dict:
    """Resident, saved and returned bytes of a plain gradient step (gpucheck's accounting), else {}: a remat
    policy's recomputation, a forward's and a transform's temporaries are outside what the bounds account for."""
    if case.kind != "grad" or case.variant != "plain" or case.budget:
        return {}
    if fw.name == "torch" and case.formulation == "scan":
        return {}  # the saved-tensor probe runs the loss eagerly, where torch's scan op cannot be traced (the suite
        # counts no saved bytes of it either: recording.GraphCost skips it)
    return gpucheck.accounting(fw, inputs, out, device, case.formulation or None)


NO_BOUNDS = ("no bounds: recomputation, forward or transform temporaries are not in the accounting, nor the saved "
             "bytes of PyTorch's scan")


def checked(accounting: dict, peak: NativePeak) -> dict:
    """The bounds and verdict of a peak (gpucheck.bounds and verdict, the peak plus the resident bytes against
    them); the upper bound takes the GEMM scratch and the small allocations memray saw at the peak, as the GPU
    check takes the cuBLAS workspace. {'verdict': NO_BOUNDS} without an accounting."""
    if not accounting:
        return {"verdict": NO_BOUNDS}
    expected = gpucheck.bounds(accounting["resident_bytes"], accounting["saved_bytes"], accounting["returned_bytes"],
                               peak.workspace_bytes + peak.small_bytes)
    return {**accounting, "lower_bytes": expected.lower, "upper_bytes": expected.upper,
            "verdict": gpucheck.verdict(accounting["resident_bytes"] + peak.bytes, expected, peak.method)}


def measure(framework: str, case: Case, device: str = "cpu") -> dict:
    """The row of one (framework, case) in this process: the native peak first, then the rest."""
    from implementations import native_peak

    fw = frameworks.load(framework, "highest")
    style, attention = _program(case.workload, case.attention)
    inputs = workloads.program_of(workloads.make_inputs(case.workload, case.size, "float32"), style, attention)
    step = _step(fw, case, inputs, device)
    peak = native_peak.native_peak_bytes(step)
    row = {**asdict(case), "framework": framework, "peak_bytes": peak.bytes, "workspace_bytes": peak.workspace_bytes,
           "small_bytes": peak.small_bytes, "method": peak.method}
    row.update(checked(_accounting(fw, case, inputs, step(), device), peak))
    other = _other_method(fw, case, inputs, step, device)
    if other is not None:
        row.update(other_peak_bytes=other.bytes, other_method=other.method)
    row["step_s"], row["tracked_step_s"] = native_peak.tracking_overhead(step, TIMED_CALLS)
    return row


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise NativePeakError(f"cannot name the commit: git rev-parse HEAD failed in {ROOT}")
    return done.stdout.strip()


def measure_in_process(framework: str, case: Case, device: str = "cpu") -> dict:
    """measure() in a fresh process under PYTHONMALLOC=malloc; NativePeakError with its last line if it fails."""
    env = dict(os.environ, PYTHONMALLOC="malloc",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.side.native_peaks", "--measure", framework,
                           *case.argv(), "--device", device], capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise NativePeakError(f"{frameworks.label(framework)} {case.workload} {case.mode} failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_all(out: Path, selections: Iterable[str] = ("check",), processes: int = 2, device: str = "cpu",
            machine_name: str | None = None, commit: str | None = None, step: Step = quiet) -> Path:
    """Every case of `selections`, each in `processes` fresh processes per framework; the rows to
    OUT/<machine>-<commit8>.csv, where they replace the rows of the same selections (the others stay). Returns the
    path; a failed measurement is left out, the others run, and NativePeakError names it once the file is written."""
    from tape_vs_trace.results import machine

    if processes < 1:
        raise NativePeakError(f"--processes must be 1 or more, not {processes}")
    selections = list(dict.fromkeys(selections))
    chosen = [(name, fw, case) for name in selections for fw, case in selection(name, device)]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NativePeakError(f"cannot create {out}: {exc.strerror or exc}") from None
    commit = commit or _commit()
    machine_name = machine_name or machine.record()["machine"]
    rows, failed = [], []
    for i, (name, fw, case) in enumerate(chosen, 1):
        for process in range(processes):
            step(f"{i} of {len(chosen)}: {frameworks.label(fw)} {case.workload} {case.kind} {case.variant} "
                 f"{case.mode} {case.formulation} {case.budget} {case.transform} (process {process + 1})")
            try:
                rows.append({**measure_in_process(fw, case, device), "selection": name, "process": process,
                             "machine": machine_name, "commit": commit})
            except NativePeakError as exc:  # the others still run; a failed case has no row (not measured)
                failed.append(str(exc))
                step(f"failed: {exc}")
    path = out / f"{machine_name}-{commit[:8]}.csv"
    kept = [r for r in read(path) if r["selection"] not in selections] if path.exists() else []
    write(path, kept + rows)
    if failed:
        raise NativePeakError(f"{len(failed)} measurement(s) failed, their rows left out of {path}; first: {failed[0]}")
    return path


def main(argv: list[str]) -> int:
    framework, case_json, *rest = argv
    device = rest[rest.index("--device") + 1] if "--device" in rest else "cpu"
    frameworks.get(framework)
    print(json.dumps(measure(framework, Case(**json.loads(case_json)), device)))
    return 0


if __name__ == "__main__":
    frameworks.isolate_allocators()  # before anything in this process imports jax
    sys.exit(main(sys.argv[2:]))
