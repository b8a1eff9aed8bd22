"""lstm: the ADBench diagonal LSTM objective; 'remat_full' recomputes each time step in the backward. Formulation
'unrolled' runs the time loop in Python, 'scan' (JAX's default) as lax.scan."""

import jax

from implementations.jax.adbench import lstm_objective

SCAN_FORM = True  # formulation 'scan' exists (the mirror of implementations.torch.lstm)


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> jax.Array:
    return lstm_objective(params["main_params"], params["extra_params"], data["state"], data["sequence"],
                          remat_steps=variant == "remat_full", unroll=formulation == "unrolled")
