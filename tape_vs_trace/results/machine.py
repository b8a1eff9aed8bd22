"""The machine record of an asv run: a meaningful machine name, the fields that identify a result series, and a
fingerprint of the host that the series key leaves out.

asv makes every machine field part of a series' identity (they become the dashboard's graph path), so only fields
that change performance and stay put across reboots are fields: the CPU (model string with family, model and
stepping), core count, device (GPU model or "cpu") and the framework versions. RAM is not one (these VMs' RAM
grows between runs), nor the kernel, clocks or driver. Those go into `fingerprint()`, which `scrub-results` stores
in each result file with the run's calibration (`tape_vs_trace.running.calibrate`); `host_check.same_host` compares two
such records and says whether two runs of one machine name can share a series of absolute times: by the
fingerprint's CPU identity, flags, caches, cores and GPU (memory and kernel are named, the calibration noted).

A cloud "machine" of one name can be a different host each day: the same `AMD EPYC` string covers several CPU
generations. The name therefore carries the CPU family and model where /proc/cpuinfo gives them
(`cpu-amd-epyc-f25m17-2c`), so different generations land in different series.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from implementations import frameworks, workloads
from tape_vs_trace.results import compile_caches

# Instruction sets that change which kernels oneDNN, MKL and XLA:CPU pick: a host with avx512 or AMX runs other
# matmul code than one with avx2 only, under the same model string.
FLAGS_OF_INTEREST = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                     "avx512_fp16", "avx_vnni", "amx_bf16", "amx_tile", "amx_int8", "amx_fp16")
_CPUINFO_KEYS = {"vendor_id": "vendor", "cpu family": "family", "model": "model", "model name": "model_name",
                 "stepping": "stepping", "microcode": "microcode", "cpu MHz": "mhz", "cache size": "cache_size"}
_XLA_DEFAULT = frameworks.xla_command_buffers("")


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """The first processor's identity in /proc/cpuinfo text: vendor, model name, family, model, stepping,
    microcode, MHz, the cache size it reports, and which of FLAGS_OF_INTEREST it has (sorted)."""
    info: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip():
            if info:
                break  # the first processor block is enough: a VM's cores are alike
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in _CPUINFO_KEYS:
            info[_CPUINFO_KEYS[key]] = value
        elif key == "flags":
            present = set(value.split())
            info["flags"] = sorted(f for f in FLAGS_OF_INTEREST if f in present)
    return info


def _read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def cache_sizes(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> dict[str, str]:
    """{'L1d': '48K', 'L1i': '64K', 'L2': '2048K', 'L3': '491520K'} from sysfs; empty where sysfs has none."""
    sizes: dict[str, str] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        sizes[f"L{level}{suffix}"] = size
    return sizes


def _run(cmd: list[str]) -> str:
    """stdout of a command, '' when it is missing or fails (a machine without nvidia-smi is the common case)."""
    if not shutil.which(cmd[0]):
        return ""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


_GPU_QUERY = ("name", "memory.total", "driver_version", "clocks.max.sm", "clocks.sm", "compute_cap")


def gpu_info(run: Callable[[list[str]], str] = _run) -> dict[str, str]:
    """The first GPU as nvidia-smi reports it (name, memory, driver, SM clocks, compute capability) and the
    newest CUDA its driver supports; empty without nvidia-smi."""
    out = run(["nvidia-smi", f"--query-gpu={','.join(_GPU_QUERY)}", "--format=csv,noheader"]).strip()
    if not out:
        return {}
    values = [part.strip() for part in out.splitlines()[0].split(",")]
    info = {key: value for key, value in zip(_GPU_QUERY, values) if value and "N/A" not in value
            and "not supported" not in value.lower()}
    info = {("gpu" if k == "name" else k.replace(".", "_")): v for k, v in info.items()}
    found = re.search(r"CUDA Version:\s*([0-9.]+)", run(["nvidia-smi"]))
    if found:
        info["driver_max_cuda"] = found.group(1)  # the driver's supported CUDA, not the runtime's
    return info


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cuda_stack() -> dict[str, str]:
    """CUDA, cuDNN and cuBLAS as the frameworks use them; every source guarded, absent keys where unknown.

    torch reports the CUDA it was built with and the cuDNN it loaded; cuBLAS and the JAX plugin are read from the
    installed wheels' metadata (no import: importing jax's plugin would initialise it)."""
    stack: dict[str, str] = {}
    try:
        import torch

        if torch.version.cuda:
            stack["torch_cuda"] = str(torch.version.cuda)
            cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
            if cudnn:
                stack["torch_cudnn"] = str(cudnn)
    except Exception:  # noqa: BLE001 - a broken torch install must not stop the record
        pass
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name.startswith("jax-cuda") and name.endswith("plugin"):
            stack["jax_plugin"] = f"{name} {dist.version}"
        elif name.startswith("nvidia-cublas"):
            stack["cublas"] = f"{name} {dist.version}"
        elif name.startswith("nvidia-cudnn"):
            stack["cudnn_wheel"] = f"{name} {dist.version}"
    return stack


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class DeviceKind:
    """A kind of GPU machine the suite is lent: the device tool's name for it, the GPU nvidia-smi reports there (its
    results' machine name follows from it, as `record` names any GPU), where the plan's default costs come from, and
    its machine start as assumed (scripts/gpu_chunks.py's leases)."""

    kind: str
    gpu: str
    costs: str
    start_s: float = 120.0

    @property
    def machine(self) -> str:
        return f"gpu-{_slug(self.gpu)}"


# A call that names no kind gets an H100 80 GB; an H200 only when named (docs/gpu.md). The stated default costs
# come from H200 runs; no H100 has been timed, so they are assumed for it until its pre-flight replaces them.
DEVICE_KINDS = {k.kind: k for k in (
    DeviceKind("nvidia-h100-x1", "NVIDIA H100 80GB HBM3", "the stated defaults, an H200's, assumed for an H100"),
    DeviceKind("nvidia-h200", "NVIDIA H200", "the stated defaults (an H200's)"),
)}


def cpu_slug(cpu: dict[str, Any]) -> str:
    """'amd-epyc-f25m17' for {'model_name': 'AMD EPYC', 'family': '25', 'model': '17'}: the marketing name without
    trademarks, frequency and filler words, then family and model, which tell CPU generations apart."""
    name = cpu.get("model_name") or platform.processor() or platform.machine()
    name = re.sub(r"\((R|TM|r|tm)\)|@.*$|\b(CPU|Processor|[0-9]+-Core)\b", " ", name)
    slug = _slug(name) or "unknown"
    if cpu.get("family") and cpu.get("model"):
        slug += f"-f{cpu['family']}m{cpu['model']}"
    return slug


def cpu_description(cpu: dict[str, Any]) -> str:
    """The machine.json `cpu` field: the model string with family, model and stepping."""
    name = cpu.get("model_name") or platform.processor() or platform.machine()
    ids = [f"{k} {cpu[k]}" for k in ("family", "model", "stepping") if cpu.get(k)]
    return f"{name} ({', '.join(ids)})" if ids else name


def record(cpuinfo: str | None = None, gpu: dict[str, str] | None = None) -> dict[str, str]:
    """asv machine fields for this machine, named after its device (GPU model, else CPU model and cores).

    Only what changes performance and survives a reboot: no RAM, kernel, clock or driver (see `fingerprint`). On GPU
    machines also the CUDA-graph settings (`torch_compile_mode`, `xla_command_buffers`); on CPU a non-default
    `torch_compile_mode` only. A ValueError names a bad TVT_TORCH_COMPILE_MODE."""
    cpu = parse_cpuinfo(_read_cpuinfo() if cpuinfo is None else cpuinfo)
    cores = os.cpu_count() or 1
    # TVT_DEVICE=cpu (make bench DEVICE=cpu) on a GPU machine runs the CPU suite: name the machine after its CPU.
    if os.environ.get("TVT_DEVICE") == "cpu":
        gpu = {}
    elif gpu is None:
        gpu = gpu_info()
    device = gpu.get("gpu", "cpu")
    name = f"gpu-{_slug(device)}" if gpu else f"cpu-{cpu_slug(cpu)}-{cores}c"
    fields = {
        "machine": name,
        "os": platform.system(),
        "arch": platform.machine(),
        "cpu": cpu_description(cpu),
        "num_cpu": str(cores),
        "device": device,
        "torch": _version("torch") or "absent",
        "jax": _version("jax") or "absent",
    }
    # CUDA graphs on or off changes step times, so the pairing is part of the series key on GPU machines, and a
    # pairing other than the default also names the machine: asv keeps one result file per machine name and
    # commit, which a run of the other pairing would overwrite. On CPU (no CUDA graphs; XLA:CPU has no command
    # buffers) only a torch.compile mode other than the default is recorded, so the CPU series keep their key.
    settings = frameworks.graph_settings()
    if gpu:
        fields.update(settings)
    elif settings["torch_compile_mode"] != "default":
        fields["torch_compile_mode"] = settings["torch_compile_mode"]
    if fields.get("torch_compile_mode", "default") != "default":
        fields["machine"] += f"-torch-{_slug(fields['torch_compile_mode'])}"
    if fields.get("xla_command_buffers", _XLA_DEFAULT) != _XLA_DEFAULT:
        fields["machine"] += f"-xla-command-buffers-{_slug(fields['xla_command_buffers'])}"
    return fields


def fingerprint(cpuinfo: str | None = None, gpu: dict[str, str] | None = None,
                stack: dict[str, str] | None = None) -> dict[str, Any]:
    """Everything else that identifies the host of a run, kept out of asv's series key: the CPU's identity, flags
    and caches, MHz, kernel, memory, threads, and on GPU machines the GPU and its CUDA stack."""
    cpu = parse_cpuinfo(_read_cpuinfo() if cpuinfo is None else cpuinfo)
    cpu["caches"] = cache_sizes()
    info: dict[str, Any] = {
        "cpu": cpu,
        "kernel": platform.release(),
        "threads": os.cpu_count() or 1,
        # Recorded, never keyed: it changes between runs on the same VM.
        "ram_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
    }
    gpu = gpu_info() if gpu is None else gpu
    if gpu:
        info["gpu"] = gpu
        info["cuda"] = cuda_stack() if stack is None else stack
    return info


def details() -> dict[str, Any]:
    """The "tape_vs_trace" entry of a fresh result file: this host's fingerprint (the flat keys kernel, threads,
    driver are kept for readers of older files), the CUDA-graph settings of the run (torch.compile's mode, XLA's
    command buffers: `implementations.frameworks.graph_settings`), the host allocator's settings every framework
    process holds (`implementations.frameworks.host_allocator`) and the environment variables that change what a
    framework measures (`implementations.frameworks.environment_settings`), on every device; and the state of the
    compile caches when the run started (`tape_vs_trace.results.compile_caches.recorded`)."""
    fp = fingerprint()
    flat: dict[str, Any] = {"kernel": fp["kernel"], "threads": str(fp["threads"])}
    if "gpu" in fp:
        flat["driver"] = fp["gpu"].get("driver_version", "")
        if "driver_max_cuda" in fp["gpu"]:
            flat["driver_max_cuda"] = fp["gpu"]["driver_max_cuda"]
    return {**flat, "fingerprint": fp, "graph_settings": frameworks.graph_settings(),
            "host_allocator": frameworks.host_allocator(), "environment": frameworks.environment_settings(),
            "compile_caches": compile_caches.recorded(), "attention_backends": attention_backends()}


def attention_backends(device: str | None = None) -> str:
    """The fused attention's pinned backend per dtype the device's step classes run, in one line
    ("float32: PyTorch flash, JAX xla"): workloads.attention_backend, which the implementations call."""
    device = device or frameworks.detect_device()
    dtypes = ("float32", "bfloat16") if device == "cuda" else ("float32",)
    return "; ".join(f"{dtype}: " + ", ".join(f"{frameworks.label(fw)} {workloads.attention_backend(fw, device, dtype)}"
                                              for fw in frameworks.NAMES) for dtype in dtypes)


def write_asv_machine_file(fields: dict[str, str], path: Path | None = None) -> Path:
    """Add (or replace) this machine's entry in ~/.asv-machine.json, keeping the other entries."""
    path = path or Path.home() / ".asv-machine.json"
    entries = json.loads(path.read_text()) if path.exists() else {}
    entries["version"] = 1
    entries[fields["machine"]] = fields
    path.write_text(json.dumps(entries, indent=4) + "\n")
    return path
