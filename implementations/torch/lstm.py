"""lstm: the ADBench diagonal LSTM objective; 'remat_full' recomputes each time step in the backward. Formulation
'unrolled' runs the time loop in Python (PyTorch's default), 'scan' as torch's scan higher-order op (a prototype:
torch._higher_order_ops.scan), the counterpart of lax.scan."""

import torch

from implementations.torch.adbench import lstm_objective

SCAN_FORM = True  # formulation 'scan' exists (common.formulation_of)


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    return lstm_objective(params["main_params"], params["extra_params"], data["state"], data["sequence"],
                          remat_steps=variant == "remat_full", unroll=formulation == "unrolled")
