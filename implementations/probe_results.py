"""What the probes return, the same types on both sides (implementations.torch.probe, implementations.jax.probe and
their compile_probe modules), so a benchmark reads either framework's numbers alike. What a field counts on each
side is said in the probe that fills it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SavedBytes:
    """What the backward pass keeps: distinct storages (PyTorch) or buffers (JAX), their bytes, and the bytes beyond
    what existed before the call (arguments and parameters)."""

    count: int
    total_bytes: int
    extra_bytes: int


@dataclass(frozen=True)
class SavedTensor:
    """One saved storage or residual: the op or primitive that produced it ("argument" if it existed before the
    call), shape, dtype, bytes (of the whole storage on the PyTorch side)."""

    op: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    is_argument: bool


@dataclass(frozen=True)
class PeakBytes:
    """Peak bytes of one step above the memory resident before it, and the method that measured them.

    `workspace_bytes` is the part of `bytes` that is GEMM-library workspace (cuBLAS, cuBLASLt, cuDNN): both probes
    count the workspace a step uses inside its peak, and say how much of it that is; 0 where there is none (CPU)."""

    bytes: int
    method: str
    workspace_bytes: int = 0


@dataclass(frozen=True)
class CompiledCosts:
    saved_bytes: int  # kept for the backward beyond the arguments (parameters, data, the cotangent)
    matmul_flops: float  # forward and backward, recomputation included
    method: str
