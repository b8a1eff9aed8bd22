"""PyTorch side of the matched workloads: one module per workload, the mirror image of ``implementations.jax``."""
