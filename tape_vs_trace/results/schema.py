"""What the side measurements write and the report reads, declared once below both: the columns of tape-vs-trace
paired's, distributed's and saved-all's CSV files, and the matmul rate a calibration file gives the roofline. The
runners write them (tape_vs_trace.side.paired, distributed_run, saved, calibrate); the report imports no runner."""

from __future__ import annotations

from typing import Any

# tape-vs-trace paired: one row per point (results/paired/<machine>-<commit8>.csv).
PAIRED_FIELDS = ("experiment", "group", "framework", "workload", "size", "mode", "formulation", "attention", "point",
                 "variant", "budget", "baseline", "time_s", "time_ci_low", "time_ci_high", "ratio", "ratio_ci_low",
                 "ratio_ci_high", "processes", "passes", "process_medians", "saved_bytes", "flops", "peak_bytes",
                 "cost_method", "peak_method", "device", "commit", "machine")

# tape-vs-trace distributed: one row per combination, KEY naming it (results/distributed/<machine>-<commit8>.csv);
# rowkey.RowKey.of_columns makes it a row's key, as the report's like rows need.
DISTRIBUTED_KEY = ("framework", "workload", "size", "dtype", "variant", "form", "mode", "ranks")
DISTRIBUTED_FIELDS = (*DISTRIBUTED_KEY, "status", "reason", "time_s", "time_ci_low", "time_ci_high", "launches",
                      "repeat", "warmup", "launch_medians", "compile_s", "compile_ci_low", "compile_ci_high",
                      "compile_launches", "compile_cache", "peak_bytes", "peak_method", "comm_bytes", "analytic_bytes",
                      "gradient_bytes", "collectives", "collectives_method", "backend", "bucket_cap_mb", "mesh_shape",
                      "threads_per_rank", "timing", "note", "device", "framework_version", "commit", "commit_date",
                      "machine")

# saved-all's columns: the case's dtype is "dtype", each record's own "tensor_dtype" (a CSV needs unique names).
SAVED_FIELDS = ("workload", "size", "variant", "dtype", "program", "framework", "op", "shape", "tensor_dtype", "nbytes",
                "is_argument", "commit")
# The variants whose breakdown explains the suite's saved-bytes rows (recording.GraphCost, custom_backward).
SAVED_VARIANTS = ("plain", "custom")
# The form of a layer or time loop that saved-all runs: the Python loop, which both frameworks have, as the suite's
# like rows compare.
SAVED_LOOP = "unrolled"


def roofline_rate(calibration: dict[str, Any], dtype: str, precision: str) -> float | None:
    """The one matmul rate (flop/s) the roofline divides by for (dtype, precision), from a calibration as `combine`
    writes it: the entry "<dtype>/<precision>", or for full precision the dtype's own; None where there is none. A
    TF32 row never falls back to the full-precision rate, which would put it several times nearer its peak."""
    rates = calibration.get("matmul_flops_per_s") if isinstance(calibration, dict) else None
    for key in (f"{dtype}/{precision}", *([dtype] if precision == "highest" else [])):
        rate = rates.get(key) if isinstance(rates, dict) else None
        if isinstance(rate, int | float) and rate > 0:
            return float(rate)
    return None


# tape-vs-trace first-step's file (tape_vs_trace/side/first_step.py), results/first_step/<machine>-<commit8>.csv: one
# row per process; the seconds of implementations.first_step.PARTS each as <part>_s.
FIRST_STEP_FOLDER = "first_step"
FIRST_STEP_FIELDS = (
    "machine", "commit", "device", "framework", "mode", "workload", "size", "cache", "process", "wall_s",
    "interpreter_s", "import_s", "harness_s", "backend_start_s", "compiler_start_s", "first_step_s", "compile_s",
    "first_execution_s", "unattributed_s", "steady_step_s", "phases", "cache_hits", "cache_misses",
    "cache_entries_before", "cache_settings", "start", "host_busy", "host_steal", "versions", "written", "status")

# tape-vs-trace native-peak's file (tape_vs_trace.side.native_peaks), results/native-peak/<machine>-<commit8>.csv: one
# row per process of a case; NATIVE_PEAK_PARAMS name the step (the case), the framework apart.
NATIVE_PEAK_FOLDER = "native-peak"
NATIVE_PEAK_PARAMS = ("workload", "size", "kind", "variant", "mode", "formulation", "attention", "budget", "transform")
NATIVE_PEAK_FIELDS = ("selection", *NATIVE_PEAK_PARAMS, "framework", "process", "peak_bytes", "workspace_bytes",
                      "small_bytes", "method", "lower_bytes", "upper_bytes", "resident_bytes", "saved_bytes",
                      "returned_bytes", "verdict", "other_peak_bytes", "other_method", "step_s", "tracked_step_s",
                      "machine", "commit")
