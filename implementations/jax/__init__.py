"""JAX side of the matched workloads: one module per workload, the mirror image of ``implementations.torch``.

Importing it turns off GPU memory preallocation unless the caller chose otherwise, so that allocator peaks mean what
they say; that must happen before JAX creates its first array. float64 support is off, as in a default JAX process,
until ``configure(..., float64=True)`` turns it on: only float64 runs (and the float64 tests) pay for it.
"""

from implementations.frameworks import isolate_allocators

isolate_allocators()

import jax  # noqa: E402


def configure(precision: str = "highest", threads: int | None = None, float64: bool = False,
              compile_cache: str | None = None) -> None:
    """Apply the fairness settings: `precision` is JAX's own name ("highest", "tensorfloat32"); `threads` is
    accepted for the mirror only, since XLA:CPU uses every core and has no flag for another count; `float64`
    switches jax_enable_x64 (without it, float64 inputs would silently become float32); `compile_cache` is the
    folder of the persistent compilation cache (None: JAX's default, off)."""
    jax.config.update("jax_default_matmul_precision", precision)
    jax.config.update("jax_enable_x64", bool(float64))
    if compile_cache and jax.config.jax_compilation_cache_dir != compile_cache:
        from jax._src import compilation_cache  # set up at the first compile: reset_cache() makes it re-read these

        jax.config.update("jax_compilation_cache_dir", compile_cache)
        # Inductor caches every graph it compiles, however fast or small: JAX then caches every executable too.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        compilation_cache.reset_cache()
