"""Test-session settings: float64 on in JAX, since the float64 parity and ADBench tests need it (benchmark
processes turn it on only for float64 runs; float32 arrays keep their dtype either way)."""

import implementations.jax as jax_side

jax_side.configure("highest", None, float64=True)
