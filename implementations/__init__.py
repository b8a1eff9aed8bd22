"""Matched PyTorch and JAX implementations of the tape-vs-trace workloads.

Never put this folder itself on ``sys.path``: its sub-packages are named ``torch`` and ``jax`` and would shadow the
real libraries. Import them as ``implementations.torch`` and ``implementations.jax``.
"""
