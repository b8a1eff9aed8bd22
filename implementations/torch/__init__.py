"""PyTorch side of the matched workloads: one module per workload, the mirror image of ``implementations.jax``."""

import os
import sys

import torch

from implementations import process_settings

# Calls in a traced graph that AOTAutograd's cache does not know: it bypassed its cache on them, and every process
# traced those steps again. sdpa_kernel puts two into the graph, a lookup of each backend by its name and the call
# that selects them; both run while the graph is traced (they pick the attention op traced in) and depend only on
# the backend names, which the graph, and so the cache key, holds. torch's scan (the LSTM's scan formulation) is a
# higher-order op, none of which the cache stores unless marked; its body is a subgraph whose code the key holds.
_CACHEABLE_CALLS = ("torch.nn.attention._backend_from_string", "torch.nn.attention._sdpa_kernel",
                    "torch.ops.higher_order.scan")


def _mark_cacheable_calls() -> None:
    """Mark _CACHEABLE_CALLS cacheable, keyed by the torch version."""
    marked = sys.modules["torch._inductor.config"].unsafe_marked_cacheable_functions
    marked.update(dict.fromkeys(_CACHEABLE_CALLS, torch.__version__))


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
    process_settings.after_import("torch._inductor.config", _mark_cacheable_calls)
    if compile_cache:
        # Inductor reads the variable at every cache lookup (cache_dir_utils.cache_dir); Triton's kernel cache is
        # set once per process from it, so it is named here too, as XLA's autotune cache follows JAX's folder.
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = compile_cache
        os.environ["TRITON_CACHE_DIR"] = os.path.join(compile_cache, "triton")
