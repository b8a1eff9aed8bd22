"""PyTorch side of the matched workloads: one module per workload, the mirror image of ``implementations.jax``."""

import torch


def configure(precision: str = "highest", threads: int | None = None, float64: bool = False) -> None:
    """Apply the fairness settings: `precision` is PyTorch's own name ("highest", "high"); `threads` CPU threads
    (every core, as XLA uses); `float64` is for the mirror only, PyTorch always supports it."""
    torch.set_float32_matmul_precision(precision)
    if threads:
        torch.set_num_threads(threads)
    # XLA accumulates bfloat16 products in float32; cuBLAS may reduce split-K partial sums in bfloat16 unless
    # PyTorch forbids it.
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
