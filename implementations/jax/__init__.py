"""JAX side of the matched workloads: one module per workload, the mirror image of ``implementations.torch``.

Importing it turns off GPU memory preallocation unless the caller chose otherwise, so that allocator peaks mean what
they say; that must happen before JAX creates its first array. float64 support is off, as in a default JAX process,
until ``configure(..., float64=True)`` turns it on: only float64 runs (and the float64 tests) pay for it.
"""

from implementations.frameworks import isolate_allocators

isolate_allocators()

import jax  # noqa: E402


def configure(precision: str = "highest", threads: int | None = None, float64: bool = False) -> None:
    """Apply the fairness settings: `precision` is JAX's own name ("highest", "tensorfloat32"); `threads` is
    accepted for the mirror only, since XLA:CPU uses every core and has no flag for another count; `float64`
    switches jax_enable_x64 (without it, float64 inputs would silently become float32)."""
    jax.config.update("jax_default_matmul_precision", precision)
    jax.config.update("jax_enable_x64", bool(float64))
