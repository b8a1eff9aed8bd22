"""summary.md's builders (tape_vs_trace.report.markdown) on hand-built rows, the expected lines written out by hand:
the provenance block, the list of cases not run, a metric's table and its cells, and the blank lines between blocks."""

from __future__ import annotations

import json
import math

import pandas as pd

from implementations import frameworks, metrics
from tape_vs_trace.report import machine_page, markdown, provenance, tables
from tape_vs_trace.report.load import COLUMNS, Results
from tests.report.helpers import summary_row


def test_kv_is_a_two_column_table_sorted_by_key_with_blank_lines() -> None:
    assert provenance._kv("Host fingerprint", {"b": 2, "a": "x"}) == [
        "Host fingerprint:", "", "| | |", "|---|---|", "| a | x |", "| b | 2 |", ""]


NAN = math.nan


def ok(**values) -> dict:
    return {"status": "ok", "value": 0.012, "ci_low": 0.010, "ci_high": 0.014, "basis": "process medians",
            "spread": 0.002} | values


def test_a_cell_is_its_value_with_the_interval_only_where_sampled() -> None:
    assert tables._cell(None, 1e-3, True) == "not run"
    assert tables._cell({"status": "failed"}, 1e-3, True) == "failed"
    assert tables._cell(ok(), 1e-3, True) == "12 [10–14]"
    assert tables._cell(ok(), 1e-3, False) == "12"
    assert tables._cell(ok(basis="exact"), 1e-3, True) == "12"  # an exact value has no interval
    assert tables._cell(ok(ci_low=NAN, ci_high=NAN), 1e-3, True) == "12"


def test_a_spread_is_shown_only_for_a_result_that_ran() -> None:
    assert tables._spread(ok(), 1e-3) == "2"
    assert tables._spread(None, 1e-3) == "n/a"
    assert tables._spread(ok(status="failed"), 1e-3) == "n/a"
    assert tables._spread(ok(spread=NAN), 1e-3) == "n/a"


def test_a_case_names_its_non_empty_parts() -> None:
    assert tables._case({"workload": "mlp", "size": "", "variant": "eager"}) == "mlp eager"
    assert tables._case({"workload": "lstm", "size": "S", "variant": "compiled/scan"}) == "lstm S compiled/scan"


RUN = "2023-11-14 22:13:20 UTC"


def provenance_row(benchmark: str, metric: str, framework: str = "torch", sampled: bool = True, status: str = "ok",
            processes: float = 3, samples: float = 12, basis: str = "process medians", dtype: str = "float32") -> dict:
    """One row of summary.csv of machine `box`, commit abc123..., as load.py writes it."""
    return {c: "" for c in COLUMNS} | {
        "benchmark": benchmark, "metric": metric, "framework": framework, "sampled": sampled, "status": status,
        "processes": processes, "samples": samples, "basis": basis, "params": json.dumps({"framework": framework}),
        "commit": "abc123" + "0" * 34, "date": "2023-11-14", "run_date": RUN, "env": "existing-venv",
        "machine": "box", "device": "cpu", "torch_version": "2.5.1", "jax_version": "0.4.35", "dtype": dtype,
        "precision": "highest", "benchmark_version": "v1"}


# machine.json without the CPU's name: the cell says '?' for it, and every other field is read by its own key
INFO = {"num_cpu": 2, "ram": "16333648", "os": "Linux", "arch": "x86_64"}


def test_provenance_counts_only_sampled_ok_rows_and_says_n_a_for_missing_counts() -> None:
    rows = pd.DataFrame([
        provenance_row("recording.GradStep_mlp.time_step", "time_step"),
        provenance_row("recording.GradStep_mlp.time_step", "time_step", framework="jax"),
        # asv's own median, no per-process counts
        provenance_row("recording.GradStep_lstm.time_step", "time_step", processes=NAN, samples=NAN,
                       basis="asv median"),
        # an exact value and a failed timing: not timed benchmarks
        provenance_row("memory.Peak_mlp.track_peak_bytes", "track_peak_bytes", sampled=False, samples=NAN,
                       basis="exact", dtype=""),
        provenance_row("recording.GradStep_cnn.time_step", "time_step", status="failed"),
    ])
    lines = provenance.provenance(Results(table=rows, machines={"box": INFO}), rows)
    step, peak = metrics.METRICS["time_step"], metrics.METRICS["track_peak_bytes"]
    assert lines[:12] == [
        "| | |", "|---|---|",
        f"| commit | `abc123{'0' * 34}` (commit date 2023-11-14) |",
        f"| run date | {RUN} (started) |",
        "| machine | box: 2 cores, 16333648 RAM, Linux x86_64 |",
        "| device | cpu |", "| torch | 2.5.1 |", "| jax | 0.4.35 |",
        "| python | n/a (asv environment `existing-venv`) |",
        "| dtype | float32 |", "| matmul precision | highest |", "| benchmark versions | v1 |"]
    start = lines.index("Samples and processes per timed benchmark (the interval comes from per-process medians):")
    assert lines[start:] == [
        "Samples and processes per timed benchmark (the interval comes from per-process medians):", "",
        "| benchmark | processes | samples | basis |", "|---|---:|---:|---|",
        "| `recording.GradStep_mlp.time_step` | 3 | 12 | process medians |",
        "| `recording.GradStep_lstm.time_step` | n/a | n/a | asv median |",
        "", "Measurement methods:", "",
        f"- `time_step` ({step.display}, seconds, sampled): {step.description}",
        f"- `track_peak_bytes` ({peak.display}, bytes, exact): {peak.description}",
        "- value of a sampled metric: the geometric mean of per-process medians; IQR: q75 − q25 of the per-process "
        "medians; [interval]: 95 % Student-t interval across processes on the logarithms of the per-process medians "
        "(n − 1 degrees of freedom). Results without samples give asv's median and quartiles and no interval.",
        lines[-1]]
    assert lines[-1].startswith("- JAX/PyTorch: formed only between rows whose parameters differ in the framework")


def test_provenance_of_a_single_row() -> None:
    """A result file with one benchmark: its one row is the provenance."""
    rows = pd.DataFrame([provenance_row("recording.GradStep_mlp.time_step", "time_step")])
    lines = provenance.provenance(Results(table=rows), rows)
    assert lines[2:4] == [f"| commit | `abc123{'0' * 34}` (commit date 2023-11-14) |",
                          f"| run date | {RUN} (started) |"]
    assert lines[5:8] == ["| device | cpu |", "| torch | 2.5.1 |", "| jax | 0.4.35 |"]


def test_provenance_prints_fingerprint_calibration_and_samples(synthetic_report) -> None:
    _, text, _ = synthetic_report
    assert "| cpu_model | Test CPU 9000 |" in text and "| matmul_gflops | 123 |" in text
    assert "| `recording.GradStep_mlp.time_step` | 3 | 12 | processes |" in text
    assert "| run date | 2023-11-14 22:13:20 UTC (started) |" in text
    assert "different hosts" not in text


def test_a_calibrations_values_per_process_are_left_to_the_file() -> None:
    cal = {"dispatch_seconds_per_op": {"torch": 2e-6}, "processes": {"torch": 3, "jax": 3},
           "per_process": {"dispatch_seconds_per_op": {"torch": [1e-6, 2e-6, 3e-6]}}}
    lines = provenance._kv("Host calibration", cal)
    assert "| dispatch cost of a tiny op | torch 2 µs |" in lines and "| processes | torch: 3; jax: 3 |" in lines
    assert not any("per_process" in line or "3e-06" in line for line in lines)

def case(framework: str, params: str) -> dict:
    return {"benchmark": "recording.GradStep_mlp.time_step", "framework": framework, "params": params,
            "workload": "mlp", "size": "S", "variant": "eager"}


def test_not_run_finds_the_other_framework_whatever_the_order_of_the_parameters() -> None:
    # asv writes the parameters in the benchmark's order, not sorted: the lookup must not depend on it
    skipped = pd.DataFrame([case("jax", '{"size": "S", "mode": "eager", "framework": "jax"}')])
    ran = pd.DataFrame([case("torch", '{"framework": "torch", "mode": "eager", "size": "S"}')])
    assert tables.not_run(skipped, ran) == [
        "- `recording.GradStep_mlp.time_step` mlp S eager: not run for JAX (no skip rule of this checkout names it) "
        "(PyTorch ran it)"]


def test_a_ratio_cell_with_one_side_missing_names_that_side_even_without_a_skip_rule() -> None:
    ran = summary_row("jax") | case("jax", '{"framework": "jax", "mode": "eager", "size": "S"}')
    assert tables._ratio({"jax": ran}) == "— (PyTorch not run: no skip rule of this checkout names why)"


def _transform_case(framework: str, transform: str, mode: str) -> dict:
    params = {"framework": framework, "workload": "mlp", "size": "16x64x256", "transform": transform, "mode": mode,
              "dtype": "float32", "precision": "highest", "device": "cpu"}
    return {"benchmark": "transforms.TransformStep_mlp.time_step", "framework": framework,
            "params": json.dumps(params), "workload": "mlp", "size": "16x64x256", "variant": f"{transform}/{mode}",
            "torch_version": "2.13.0+cpu", "jax_version": "0.10.2"}


def test_not_run_says_a_cpu_budget_skip_apart_from_a_framework_limit_with_its_version() -> None:
    # Both compiled PyTorch rows were skipped while JAX ran them: one for time on a CPU, one a real PyTorch limit.
    skipped = pd.DataFrame([_transform_case("torch", "jvp", "compiled"),
                            _transform_case("torch", "hvp_rev_fwd", "compiled")])
    ran = pd.DataFrame([_transform_case("jax", "jvp", "compiled"), _transform_case("jax", "hvp_rev_fwd", "compiled")])
    budget, limit = tables.not_run(skipped, ran)
    assert budget.startswith("- `transforms.TransformStep_mlp.time_step` mlp 16x64x256 jvp/compiled: not run for "
                             "PyTorch 2.13.0+cpu: outside the CPU budget, not a framework limit: torch.compile of jvp "
                             "takes seconds")
    assert budget.endswith("(JAX ran it)") and "not implemented" not in budget
    assert limit.startswith("- `transforms.TransformStep_mlp.time_step` mlp 16x64x256 hvp_rev_fwd/compiled: not run "
                            "for PyTorch 2.13.0+cpu: not implemented in PyTorch (a framework limit): torch.compile of "
                            "torch.func.grad over torch.func.jvp")
    assert "budget" not in limit


def test_not_run_gives_each_frameworks_reason_where_neither_ran() -> None:
    skipped = pd.DataFrame([_transform_case("torch", "grad_autograd", "compiled"),
                            _transform_case("jax", "grad_autograd", "compiled")])
    [line] = tables.not_run(skipped, pd.DataFrame(columns=["benchmark", "framework", "params"]))
    assert ": not run for PyTorch 2.13.0+cpu: outside the CPU budget" in line
    assert "; not run for JAX 0.10.2: grad_autograd is a PyTorch tape API; JAX has no counterpart" in line
    assert "ran it" not in line


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def methods_rows(torch_methods: tuple[str, ...]) -> pd.DataFrame:
    rows = [summary_row("torch", 4e6, size=f"s{i}", metric="track_peak_bytes", unit="bytes")
            | {"memory_method": m, "sampled": False, "basis": "exact",
               "params": f'{{"framework": "torch", "size": "s{i}"}}'} for i, m in enumerate(torch_methods)]
    return frame(*rows)


def test_a_method_that_changes_between_rows_is_named_on_every_row_and_not_above_the_table() -> None:
    lines = tables.metric_table(methods_rows(("tracker", "allocator")), False)
    assert not any(line.startswith("Peak memory measured by") for line in lines)
    assert lines[2].endswith("| memory method (PyTorch; JAX) |")
    assert lines[4].endswith("| tracker; — |") and lines[5].endswith("| allocator; — |")


def test_without_memory_methods_there_is_no_measured_by_line() -> None:
    lines = tables.metric_table(methods_rows(("",)), False)
    assert not any("measured by" in line for line in lines)


def test_pairs_match_parameters_whatever_their_order() -> None:
    rows = frame(summary_row("torch") | {"params": '{"a": 1, "b": 2, "framework": "torch"}'},
                 summary_row("jax") | {"params": '{"b": 2, "framework": "jax", "a": 1}'})
    assert [sorted(p) for p in tables._pairs(rows)] == [["jax", "torch"]]


def lines_of(table: pd.DataFrame) -> list[str]:
    return markdown.markdown(Results(table=table, machines={"box": {}, "lab": {}}), {}, "results").split("\n")


def test_markdown_separates_its_blocks_with_blank_lines() -> None:
    lines = lines_of(pd.DataFrame([summary_row(fw) for fw in frameworks.NAMES]))
    assert lines[0] == "# tape-vs-trace report" and lines[1] == "" and lines[2].startswith("Built by ")
    heads = [i for i, line in enumerate(lines) if line.startswith("#")]
    assert all(lines[i + 1] == "" for i in heads)


def test_the_front_heads_each_machine_of_several_and_links_its_page() -> None:
    lines = lines_of(pd.DataFrame([summary_row("torch", machine="box"), summary_row("torch", machine="lab")]))
    heads = [line for line in lines if line.startswith("## ")]
    assert heads == ["## Scale"]  # without a JAX/PyTorch ratio the front has only its scale and the links
    for group in ("box", "lab"):
        assert f"({machine_page.path(group)})" in "\n".join(lines)
    assert markdown.slug("All results on cpu-x86 (2 cores)") == "all-results-on-cpu-x86-2-cores"


def test_a_nested_record_reads_as_words_not_as_a_python_dict() -> None:
    assert provenance.readable({"torch_compile_mode": "default", "flags": ["avx2", "fma"], "mhz": 2600.0}) == \
        "torch_compile_mode: default; flags: avx2, fma; mhz: 2600"
    lines = provenance._kv("Host calibration", {"matmul_flops_per_s": {"float32": 3.7e11}, "copy_bytes_per_s": 4.0e10,
                                              "dispatch_seconds_per_op": {"torch": 1.9e-06}, "samples": {"x": 1}})
    assert lines[4:] == ["| matmul rate (PyTorch; the roofline's) | float32 370 GFLOP/s |",
                         "| copy bandwidth | 40 GB/s |", "| dispatch cost of a tiny op | torch 1.9 µs |", ""]


def test_the_runner_record_is_one_readable_line() -> None:

    details = {"runner_of": {"a.B.time_step": "worker", "a.C.track_x": "worker", "a.D.time_step": "asv"},
               "worker_runs": {"rounds": 5, "processes": 16, "wall_s": 499.2, "per_process": [{"round": 1}]}}
    assert provenance._runner_lines(details) == [
        "| runner | 1 benchmark(s) by asv run, 2 benchmark(s) by tape-vs-trace run; tape-vs-trace run: 5 rounds, 16 "
        "worker processes, 499.2 s |"]
    assert provenance._runner_lines({}) == []


def test_run_dates_and_rounds_read_as_what_they_are() -> None:
    # one start for every benchmark (the runner stamps its run once): that start and the run's wall time, not "a to a"
    assert provenance._run_dates([RUN, RUN], {"wall_s": 478.0}) == f"{RUN} (started; tape-vs-trace run took 478.0 s)"
    assert provenance._run_dates(["a", "b"], {}) == "a to b (the benchmarks' start times)"
    assert provenance._run_words({"rounds": 1, "processes": 2, "wall_s": 9}).startswith("1 round, 2 worker")
    assert provenance._run_words({"rounds": 1, "rounds_planned": 3, "processes": 2}).startswith("1 of 3 rounds")


def test_the_runner_line_names_the_profile_and_why_a_budget_stopped_the_rounds() -> None:

    details = {"runner_of": {"a.B.time_step": "worker"},
               "worker_runs": {"profile": "cited", "rounds": 9, "rounds_planned": 12, "processes": 18, "wall_s": 470.0,
                               "stopped": "round 10 of 12 not started: about 41 s, 10 s of the 480 s budget left"}}
    assert provenance._runner_lines(details) == [
        "| runner | 1 benchmark(s) by tape-vs-trace run; tape-vs-trace run: profile cited, 9 of 12 rounds, 18 worker "
        "processes, 470.0 s (round 10 of 12 not started: about 41 s, 10 s of the 480 s budget left) |"]


def test_the_runner_line_says_which_groups_were_copied_in_their_rounds_and_from_when() -> None:
    details = {"runner_of": {"a.B.time_step": "worker"},
               "worker_runs": {"rounds": 4, "processes": 22, "wall_s": 200.0,
                               "copies": [{}, {}, {"torch others highest": 2},
                                          {"torch others highest": 3, "jax compiled highest": 2}]}}
    assert provenance._runner_lines(details) == [
        "| runner | 1 benchmark(s) by tape-vs-trace run; tape-vs-trace run: 4 rounds, 22 worker processes, 200.0 s; "
        "copied in their rounds: torch others highest (3 processes a round from round 3), jax compiled highest (2 "
        "processes a round from round 4) |"]


def test_the_runner_lines_name_each_run_the_file_holds_and_the_steal_its_workers_saw() -> None:
    """A later run of other rows (make compile-series) merged into the file keeps the earlier run's record: both
    get a line, and a run's per-process steal (tape_vs_trace.results.host_load) is summed up as its median and most."""

    def run(profile: str | None, rounds: int, steal: list[float]) -> dict:
        return {"profile": profile, "rounds": rounds, "processes": 4 * rounds, "wall_s": 10.0 * rounds,
                "per_process": [{"round": 1, "host": {"steal": s, "busy": 0.5}} for s in steal] + [{"round": 2}]}

    details = {"runner_of": {"a.B.time_step": "worker"}, "worker_runs": {**run(None, 1, []), "parts": 4},
               "earlier_runs": [{"worker_runs": run("cited", 4, [0.0, 0.002, 0.082, 0.033])}, {"chosen": {}}]}
    assert provenance._runner_lines(details) == [
        "| runner | 1 benchmark(s) by tape-vs-trace run; tape-vs-trace run: 4 parts, 1 round, 4 worker processes, "
        "10.0 s |",
        "| earlier run in this file | profile cited, 4 rounds, 16 worker processes, 40.0 s; the hypervisor's steal "
        "while each worker ran: median 1.8%, most 8.2% |"]


def test_a_scan_row_both_frameworks_ran_names_each_operator() -> None:
    """The compiled LSTM's scan is PyTorch's prototype operator against lax.scan: the table's case says so; a row
    only JAX ran (its scan is what the suite means by scan) says nothing more."""
    def scan(framework: str, workload: str = "lstm") -> dict:
        params = {"framework": framework, "workload": workload, "mode": "compiled", "formulation": "scan"}
        return summary_row(framework, workload=workload, variant="compiled/scan") | {"params": json.dumps(params)}

    lines = tables.metric_table(frame(scan("torch"), scan("jax")), False)
    assert lines[-1].startswith("| lstm small compiled/scan (PyTorch: prototype torch._higher_order_ops.scan; JAX: "
                                "lax.scan) |")
    lines = tables.metric_table(frame(scan("jax", "transformer")), False)
    assert lines[-1].startswith("| transformer small compiled/scan |")
