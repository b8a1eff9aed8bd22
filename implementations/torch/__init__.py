"""PyTorch side of the matched workloads: one module per workload, the mirror image of ``implementations.jax``."""

import os

import torch


def configure(precision: str = "highest", threads: int | None = None, float64: bool = False,
              compile_cache: str | None = None) -> None:
    """Apply the fairness settings: `precision` is PyTorch's own name ("highest", "high"); `threads` CPU threads
    (every core, as XLA uses); `float64` is for the mirror only, PyTorch always supports it; `compile_cache` is the
    folder of Inductor's on-disk caches, FX-graph, AOTAutograd and Triton kernels (None: Inductor's default)."""
    torch.set_float32_matmul_precision(precision)
    if threads:
        torch.set_num_threads(threads)
    # XLA accumulates bfloat16 products in float32; cuBLAS may reduce split-K partial sums in bfloat16 unless
    # PyTorch forbids it.
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    if compile_cache:
        # Inductor reads the variable at every cache lookup (cache_dir_utils.cache_dir); Triton's kernel cache is
        # set once per process from it, so it is named here too, as XLA's autotune cache follows JAX's folder.
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = compile_cache
        os.environ["TRITON_CACHE_DIR"] = os.path.join(compile_cache, "triton")
