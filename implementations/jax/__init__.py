"""JAX side of the matched workloads: one module per workload, the mirror image of ``implementations.torch``.

Importing it turns on float64 support (ADBench references and the float64 parity tests need it; arrays keep the
dtype the spec gives them) and, unless the caller chose otherwise, turns off GPU memory preallocation so that
allocator peaks mean what they say. Both must happen before JAX creates its first array.
"""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
