"""The machine record of an asv run: a meaningful machine name and the fields that identify a result series.

asv makes every machine field part of a series' identity, so only fields whose change makes numbers incomparable
are recorded as fields: CPU model, core count, memory, device (GPU model or "cpu") and the framework versions.
Kernel release, driver and CUDA versions go into `details`, shown by the report, not into the series key.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu() -> dict[str, str]:
    if not shutil.which("nvidia-smi"):
        return {}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True, timeout=30).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    if not out:
        return {}
    name, driver = (part.strip() for part in out[0].split(",", 1))
    return {"gpu": name, "driver": driver}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def record() -> dict[str, str]:
    """asv machine fields for this machine, named after its device (GPU model, else CPU model and cores)."""
    cpu, cores = _cpu_model(), os.cpu_count() or 1
    # TVT_DEVICE=cpu (make bench DEVICE=cpu) on a GPU machine runs the CPU suite: name the machine after its CPU.
    gpu = {} if os.environ.get("TVT_DEVICE") == "cpu" else _gpu()
    ram_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9)
    device = gpu.get("gpu", "cpu")
    name = f"gpu-{_slug(device)}" if gpu else f"cpu-{_slug(cpu)}-{cores}c"
    fields = {
        "machine": name,
        "os": platform.system(),
        "arch": platform.machine(),
        "cpu": cpu,
        "num_cpu": str(cores),
        "ram": f"{ram_gb} GB",
        "device": device,
        "torch": metadata.version("torch"),
        "jax": metadata.version("jax"),
    }
    return fields


def details() -> dict[str, str]:
    """What else identifies the run's machine, kept out of asv's series key: kernel, GPU driver and the newest CUDA
    it supports, and the CPU threads the benchmarks use."""
    info = {"kernel": platform.release(), "threads": str(os.cpu_count() or 1)}
    info.update({k: v for k, v in _gpu().items() if k == "driver"})
    if shutil.which("nvidia-smi"):
        try:
            banner = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
            found = re.search(r"CUDA Version:\s*([0-9.]+)", banner)
            if found:
                info["driver_max_cuda"] = found.group(1)  # the driver's supported CUDA, not the runtime's
        except (OSError, subprocess.SubprocessError):
            pass
    return info


def write_asv_machine_file(fields: dict[str, str], path: Path | None = None) -> Path:
    """Add (or replace) this machine's entry in ~/.asv-machine.json, keeping the other entries."""
    path = path or Path.home() / ".asv-machine.json"
    entries = json.loads(path.read_text()) if path.exists() else {}
    entries["version"] = 1
    entries[fields["machine"]] = fields
    path.write_text(json.dumps(entries, indent=4) + "\n")
    return path
