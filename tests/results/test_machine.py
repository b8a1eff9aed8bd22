"""The machine record: a series key that names the CPU generation and leaves RAM out, and the fingerprint."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tape_vs_trace.results import machine
from tests.cpuinfo import AMD

ROOT = Path(__file__).resolve().parents[2]

H200 = "NVIDIA H200, 143771 MiB, 580.65.06, 1980 MHz, 345 MHz, 9.0"
BANNER = "| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0 |"


def fake_smi(cmd: list[str]) -> str:
    return H200 + "\n" if any(a.startswith("--query-gpu") for a in cmd) else BANNER


def test_cpuinfo_gives_family_model_stepping_and_the_flags_of_interest() -> None:
    cpu = machine.parse_cpuinfo(AMD)
    assert (cpu["vendor"], cpu["model_name"], cpu["family"], cpu["model"], cpu["stepping"]) == \
        ("AuthenticAMD", "AMD EPYC", "25", "17", "1")
    assert cpu["flags"] == ["avx", "avx2", "avx512_bf16", "avx512f", "fma"]  # sse, sha_ni are not of interest
    assert cpu["mhz"] == "2445.406"


def test_cpu_name_tells_generations_apart_and_the_key_has_no_ram(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TVT_DEVICE", raising=False)
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 2)
    zen3 = machine.record(AMD, gpu={})
    zen2 = machine.record(AMD.replace("model\t\t: 17", "model\t\t: 49").replace("family\t: 25", "family\t: 23"),
                          gpu={})
    assert zen3["machine"] == "cpu-amd-epyc-f25m17-2c"
    assert zen2["machine"] == "cpu-amd-epyc-f23m49-2c"
    assert zen3["cpu"] == "AMD EPYC (family 25, model 17, stepping 1)"
    assert "ram" not in zen3
    # RAM grows between runs on these VMs: the key must not move with it.
    monkeypatch.setattr(machine.os, "sysconf", lambda name: 4096 if name == "SC_PAGE_SIZE" else 123456789)
    assert machine.record(AMD, gpu={}) == zen3
    intel = machine.cpu_slug({"model_name": "Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz"})
    assert intel == "intel-xeon-platinum-8480"


def test_gpu_record_from_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TVT_DEVICE", raising=False)
    gpu = machine.gpu_info(fake_smi)
    assert gpu == {"gpu": "NVIDIA H200", "memory_total": "143771 MiB", "driver_version": "580.65.06",
                   "clocks_max_sm": "1980 MHz", "clocks_sm": "345 MHz", "compute_cap": "9.0",
                   "driver_max_cuda": "13.0"}
    fields = machine.record(AMD, gpu=gpu)
    assert (fields["machine"], fields["device"]) == ("gpu-nvidia-h200", "NVIDIA H200")
    assert not {"driver", "driver_version", "clocks_sm", "memory_total"} & set(fields)  # not in the series key
    monkeypatch.setenv("TVT_DEVICE", "cpu")  # the CPU suite on a GPU machine is named after the CPU
    assert machine.record(AMD, gpu=gpu)["machine"].startswith("cpu-amd-epyc-f25m17-")
    assert machine.gpu_info(lambda cmd: "") == {}


def test_fingerprint_holds_what_the_key_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for index, (level, kind, size) in enumerate([("1", "Data", "48K"), ("2", "Unified", "2048K")]):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(value + "\n")
    assert machine.cache_sizes(tmp_path) == {"L1d": "48K", "L2": "2048K"}
    monkeypatch.setattr(machine, "cache_sizes", lambda: {"L1d": "48K", "L2": "2048K"})
    fp = machine.fingerprint(AMD, gpu=machine.gpu_info(fake_smi), stack={"torch_cuda": "13.0"})
    assert fp["cpu"]["flags"] == ["avx", "avx2", "avx512_bf16", "avx512f", "fma"]
    assert fp["cpu"]["caches"] == {"L1d": "48K", "L2": "2048K"}
    assert fp["gpu"]["driver_version"] == "580.65.06" and fp["cuda"] == {"torch_cuda": "13.0"}
    assert fp["ram_bytes"] > 0 and fp["kernel"]
    assert "gpu" not in machine.fingerprint(AMD, gpu={})


def test_machine_command_writes_a_key_without_ram(tmp_path: Path) -> None:
    done = subprocess.run(["python", "-m", "tape_vs_trace.cli", "machine"], cwd=ROOT, capture_output=True,
                          text=True, env={"HOME": str(tmp_path), "PATH": _path(), "PYTHONPATH": str(ROOT),
                                          "TVT_DEVICE": "cpu"}, check=True)
    name = done.stdout.strip()
    entry = json.loads((tmp_path / ".asv-machine.json").read_text())[name]
    assert entry["machine"] == name and "ram" not in entry and entry["device"] == "cpu"


def _path() -> str:
    import os
    import sys

    return f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"


def test_make_bench_calibrates_first_and_hands_the_file_to_scrub_results() -> None:
    # The benchmarks read no calibration (the report derives the roofline from it): the file goes from calibrate to
    # scrub-results, which stores it in every result file of the run.
    done = subprocess.run(["make", "-n", "bench", "DEVICE=cpu"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    text = done.stdout
    calibrate, run, scrub = (text.index(s) for s in ("calibrate --out", "tape-vs-trace run", "scrub-results"))
    assert calibrate < run < scrub
    path = str(ROOT / ".asv" / "calibration.json")
    assert f"calibrate --out {path} " in text[calibrate - 50:run]
    # The runner scrubs after every round, so it gets the file as scrub-results does; nothing before it reads it.
    assert f"TVT_CALIBRATION={path} " in text[run - 400:run] and f"TVT_CALIBRATION={path} " in text[run:scrub]
    assert "TVT_CALIBRATION" not in text[calibrate:run - 400]


def test_the_record_follows_the_cuda_graph_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TVT_DEVICE", "TVT_TORCH_COMPILE_MODE", "XLA_FLAGS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 2)
    h200 = {"gpu": "NVIDIA H200"}
    default = machine.record(AMD, gpu=h200)
    assert default["machine"] == "gpu-nvidia-h200"
    assert (default["torch_compile_mode"], default["xla_command_buffers"]) == ("default", "on (XLA default)")
    assert machine.details()["graph_settings"] == {"torch_compile_mode": "default",
                                                   "xla_command_buffers": "on (XLA default)"}
    cpu = machine.record(AMD, gpu={})
    assert "torch_compile_mode" not in cpu and "xla_command_buffers" not in cpu  # the CPU series keep their key
    monkeypatch.setenv("TVT_TORCH_COMPILE_MODE", "reduce-overhead")
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_enable_command_buffer=")
    graphs = machine.record(AMD, gpu=h200)
    assert (graphs["torch_compile_mode"], graphs["xla_command_buffers"]) == ("reduce-overhead", "off")
    # Another pairing is another machine name: asv keeps one result file per machine and commit.
    assert graphs["machine"] == "gpu-nvidia-h200-torch-reduce-overhead-xla-command-buffers-off"
    assert machine.details()["graph_settings"] == {"torch_compile_mode": "reduce-overhead",
                                                   "xla_command_buffers": "off"}
    cpu = machine.record(AMD, gpu={})
    assert cpu["torch_compile_mode"] == "reduce-overhead" and "xla_command_buffers" not in cpu
    assert cpu["machine"] == "cpu-amd-epyc-f25m17-2c-torch-reduce-overhead"


def test_the_details_record_the_environment_that_changes_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    from implementations import frameworks

    for name in frameworks.SETTING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_autotune_level=0")
    env = machine.details()["environment"]
    assert set(env) == set(frameworks.SETTING_VARIABLES)
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert env["XLA_FLAGS"] == "--xla_gpu_autotune_level=0"
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"  # what isolate_allocators gives every framework process
    assert env["JAX_SOFTMAX_CUSTOM_JVP"] == env["OMP_NUM_THREADS"] == "unset"
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/home/someone/cache")
    env = machine.details()["environment"]
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false (replaced the preset 'true')"  # set outright
    assert env["TORCHINDUCTOR_CACHE_DIR"] == "set"  # results carry no path of the machine
