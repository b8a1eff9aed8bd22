"""Which JAX CUDA build goes with the PyTorch on this interpreter, and whether both are there already.

Plain Python, no project import: `make setup DEVICE=cuda` runs it before the project is installed.

    python scripts/jax_cuda.py                 # prints the requirement, e.g. jax[cuda13]==0.11.2
    python scripts/jax_cuda.py --preinstalled  # exit 0 when torch has CUDA and a jax CUDA plugin is installed

JAX's CUDA wheels come per CUDA major version (`jax[cuda12]`, `jax[cuda13]`); mixing a CUDA 13 torch with
`jax[cuda12]` loads two sets of CUDA libraries into one machine, one of them possibly too new for the driver.
The major version is taken from `torch.version.cuda`, so both frameworks use the same CUDA generation.
"""

from __future__ import annotations

import sys
from importlib import metadata

SUPPORTED_MAJORS = ("12", "13")


def jax_cuda_requirement(torch_cuda: str | None, jax_version: str | None) -> str:
    """'jax[cuda13]==0.11.2' for torch built with CUDA 13.0 and jax 0.11.2 installed; unpinned without jax.

    A torch without CUDA (a CPU build) or with a CUDA major JAX has no wheels for is an error: there is no
    matching plugin to install."""
    if not torch_cuda:
        raise ValueError("torch has no CUDA (a CPU build): install a CUDA build of torch first")
    major = torch_cuda.split(".", 1)[0]
    if major not in SUPPORTED_MAJORS:
        raise ValueError(f"torch is built with CUDA {torch_cuda}; JAX has CUDA wheels for majors "
                         f"{', '.join(SUPPORTED_MAJORS)} only")
    return f"jax[cuda{major}]" + (f"=={jax_version}" if jax_version else "")


def _jax_version() -> str | None:
    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:
        return None


def has_jax_cuda_plugin() -> bool:
    return any((dist.metadata["Name"] or "").lower().startswith("jax-cuda") for dist in metadata.distributions())


def main(argv: list[str]) -> int:
    try:
        import torch
    except ImportError:
        print("error: torch is not installed for this interpreter", file=sys.stderr)
        return 1
    if argv[:1] == ["--preinstalled"]:
        ready = bool(torch.version.cuda) and _jax_version() is not None and has_jax_cuda_plugin()
        print("preinstalled" if ready else "not preinstalled")
        return 0 if ready else 1
    try:
        print(jax_cuda_requirement(torch.version.cuda, _jax_version()))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
