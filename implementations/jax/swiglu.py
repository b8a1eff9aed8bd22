"""swiglu: (silu(x @ w_gate) * (x @ w_up)) @ w_down, with silu(gate) * up plain or fused with its own backward."""

import jax

from implementations.jax.common import silu
from implementations.workloads import style_of


@jax.custom_vjp
def silu_mul(gate: jax.Array, up: jax.Array) -> jax.Array:
    """silu(gate) * up whose backward saves only its two inputs and recomputes sigmoid(gate)."""
    return jax.nn.silu(gate) * up


def _silu_mul_fwd(gate, up):
    return silu_mul(gate, up), (gate, up)


def _silu_mul_bwd(residuals, grad):
    gate, up = residuals
    sig = jax.nn.sigmoid(gate)
    d_silu = sig * (1 + gate * (1 - sig))
    return grad * up * d_silu, grad * gate * sig


silu_mul.defvjp(_silu_mul_fwd, _silu_mul_bwd)


def silu_mul_autodiff(gate: jax.Array, up: jax.Array, style: str = "matched") -> jax.Array:
    return silu(gate, style) * up


def swiglu_mlp(x, w_gate, w_up, w_down, custom: bool = False, style: str = "matched") -> jax.Array:
    # The style is the plain backward's silu (common.silu); the custom one is written out the same on both sides.
    if custom:
        return silu_mul(x @ w_gate, x @ w_up) @ w_down
    return silu_mul_autodiff(x @ w_gate, x @ w_up, style) @ w_down


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> jax.Array:
    return swiglu_mlp(data["x"], params["w_gate"], params["w_up"], params["w_down"], custom=variant == "custom",
                      style=style_of(static))
