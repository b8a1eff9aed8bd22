"""The settings every framework process holds and records with its results: glibc's host allocator thresholds,
JAX's preallocation off, the CUDA-graph pairing (torch.compile's mode, XLA's command buffers) and the environment
variables that change what a process measures; and after_import, which applies a setting of a module the moment it
is imported. Nothing here imports a framework."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable
from typing import Any

# glibc's dynamic mmap threshold rises with the largest mmapped block a process has freed, so a process's history
# decided whether a step's host buffers were mapped afresh on every call or reused from the heap (docs/history.md
# has the measurements). Every framework process holds both thresholds where glibc's own adjustment ends: the state
# a long-running process reaches. Source: glibc mallopt(3), M_MMAP_THRESHOLD.
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
_host_allocator: str | None = None


def host_allocator(libc: Any = None) -> str:
    """Hold glibc malloc's mmap and trim thresholds fixed (once per process) and say what this process runs with.

    Where there is no glibc (macOS, musl) nothing is changed and the answer says so; `libc` is for tests."""
    global _host_allocator
    if _host_allocator is None or libc is not None:
        if libc is None:
            import ctypes

            # The symbols already loaded into this process (dlopen(NULL)): its C library, without find_library's
            # ldconfig subprocess in every benchmark process.
            try:
                libc = ctypes.CDLL(None)
            except OSError:
                libc = None
        if libc is None or not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
            _host_allocator = "platform default (no glibc)"
        elif libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and \
                libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1:
            _host_allocator = (f"glibc malloc, mmap threshold {MMAP_THRESHOLD >> 20} MiB and trim threshold "
                               f"{TRIM_THRESHOLD >> 20} MiB held fixed")
        else:
            _host_allocator = "glibc malloc, its defaults (mallopt refused the thresholds)"
    return _host_allocator


# JAX's allocator as every framework process runs it: no preallocation (else its peak is the pool, not the step's)
# and the default BFC allocator (the platform allocator keeps no peak_bytes_in_use). Set outright: an image's preset
# would otherwise survive. A value it replaced is named in REPLACED_VARIABLE, which children inherit, and recorded.
ALLOCATOR_ENVIRONMENT = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "XLA_PYTHON_CLIENT_ALLOCATOR": None}
REPLACED_VARIABLE = "TVT_REPLACED_ALLOCATOR_SETTINGS"


def isolate_allocators() -> None:
    """Before any import of jax: ALLOCATOR_ENVIRONMENT set outright, a preset it replaces named in
    REPLACED_VARIABLE. The one place that sets it; every entry point that may import jax calls this first."""
    replaced = [f"{name}={preset}" for name, preset in replaced_presets().items()]
    for name, value in ALLOCATOR_ENVIRONMENT.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if replaced:
        os.environ[REPLACED_VARIABLE] = ";".join(dict.fromkeys(replaced))


# CUDA graphs are a setting on both sides, so a fair comparison states the pair it ran. The default pairing is each
# framework's own default: torch.compile's "default" mode (no CUDA graphs) against XLA's command buffers on (CUDA
# graphs for the captured kernels). TVT_TORCH_COMPILE_MODE=reduce-overhead turns CUDA graphs on in PyTorch;
# XLA_FLAGS=--xla_gpu_enable_command_buffer= turns them off in XLA.
TORCH_COMPILE_MODES = ("default", "reduce-overhead")
_COMMAND_BUFFER_FLAG = "--xla_gpu_enable_command_buffer"


def torch_compile_mode() -> str:
    """The `mode` every torch.compile of a benchmarked step gets: TVT_TORCH_COMPILE_MODE, "default" if unset; a
    ValueError lists the valid modes."""
    mode = os.environ.get("TVT_TORCH_COMPILE_MODE") or "default"
    if mode not in TORCH_COMPILE_MODES:
        raise ValueError(f"unknown TVT_TORCH_COMPILE_MODE {mode!r}; valid choices: {', '.join(TORCH_COMPILE_MODES)}")
    return mode


def xla_command_buffers(xla_flags: str | None = None) -> str:
    """XLA's command buffers (CUDA graphs) as XLA_FLAGS sets them: "on (XLA default)" without the flag, "off" when
    it is set empty, else the command types it lists. The last occurrence wins, as in XLA's flag parser."""
    flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
    value = None
    for flag in flags.split():
        name, _, rest = flag.partition("=")
        if name == _COMMAND_BUFFER_FLAG:
            value = rest
    if value is None:
        return "on (XLA default)"
    return value or "off"


# Environment variables that change what a framework process measures: allocator behaviour (preallocation, the
# allocator, PyTorch's caching allocator), compiler flags, numerics and threads. Recorded with every result.
SETTING_VARIABLES = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_PYTHON_CLIENT_MEM_FRACTION",
                     "PYTORCH_CUDA_ALLOC_CONF", "XLA_FLAGS", "JAX_DEFAULT_MATMUL_PRECISION", "JAX_ENABLE_X64",
                     "JAX_SOFTMAX_CUSTOM_JVP", "TORCHINDUCTOR_FX_GRAPH_CACHE", "TORCHINDUCTOR_CACHE_DIR",
                     "JAX_COMPILATION_CACHE_DIR", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TVT_TORCH_COMPILE_MODE")


# Variables that name a folder: recorded as set or unset, since committed results carry no path of the machine.
FOLDER_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR")


def environment_settings() -> dict[str, str]:
    """Each of SETTING_VARIABLES as a benchmark process sees it: its value, or "unset"; the allocator's as
    isolate_allocators sets them, with any preset it replaced; a folder variable as "set", never its path."""
    found = {name: os.environ.get(name, "unset") for name in SETTING_VARIABLES}
    found.update({name: "set" for name in FOLDER_VARIABLES if name in os.environ})
    found.update({name: value or "unset" for name, value in ALLOCATOR_ENVIRONMENT.items()})
    found.update({name: f"{found[name]} (replaced the preset {value!r})" for name, value in replaced_presets().items()})
    return found


def replaced_presets() -> dict[str, str]:
    """The allocator presets isolate_allocators replaced (or, in a process that has not called it yet, will replace
    in every framework process it starts): variable -> the preset's value."""
    found = dict(r.split("=", 1) for r in os.environ.get(REPLACED_VARIABLE, "").split(";") if "=" in r)
    for name, value in ALLOCATOR_ENVIRONMENT.items():
        preset = os.environ.get(name)
        if preset is not None and preset != value and not (value == "false" and preset.lower() == "false"):
            found[name] = preset
    return found


def graph_settings() -> dict[str, str]:
    """The CUDA-graph settings this process runs with: torch.compile's mode and XLA's command buffers."""
    return {"torch_compile_mode": torch_compile_mode(), "xla_command_buffers": xla_command_buffers()}


class _ThenLoader(importlib.abc.Loader):
    """A module's own loader, with each of `thens` called once the module has run."""

    def __init__(self, loader: Any, thens: list[Callable[[], None]]):
        self.loader, self.thens = loader, thens

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        for then in self.thens:
            then()

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ...: the module's own loader answers
        return getattr(self.loader, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: once, where `name` is imported, wraps its loader so `thens` run right after it."""

    def __init__(self, name: str):
        self.name, self.thens = name, []

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenLoader(spec.loader, self.thens)
        return spec


def after_import(name: str, then: Callable[[], None]) -> None:
    """Call `then` once module `name` has been imported: now if it has, else right after its import, so that a
    setting of a module that is slow to import (TorchDynamo, Inductor's config) costs nothing in a process that
    never imports it. `then` reads the module from sys.modules: its parent does not name it yet when `then` runs.
    One finder per module holds every setting asked for it, each once: a finder stops the search for that module."""
    if name in sys.modules:
        then()
        return
    finder = next((f for f in sys.meta_path if isinstance(f, _AfterImport) and f.name == name), None)
    if finder is None:
        finder = _AfterImport(name)
        sys.meta_path.insert(0, finder)
    if then not in finder.thens:
        finder.thens.append(then)
