"""Every workload's spec (implementations.workloads reads them): its sizes, dtypes, variants, program axes, which
sizes each benchmark family runs per device, its input generator and output shape, and the pins of its inputs and
bfloat16 tolerance. Checked against the families on import."""

from __future__ import annotations

from implementations import input_generators as gen
from implementations.workload_spec import (
                                           ATTENTIONS,
                                           FORMULATIONS,
                                           MATMUL_DTYPES,
                                           STYLES,
                                           WorkloadSpec,
                                           check_grid,
                                           grid,
                                           on,
)

WORKLOADS: dict[str, WorkloadSpec] = {
    spec.name: spec
    for spec in (
        WorkloadSpec(
            "mlp",
            "silu(x @ w1) @ w2",
            ("plain", "remat_full", "remat_dots"),
            {
                "tiny": {"batch": 4, "width": 8, "hidden": 16},
                "64x256x1024": {"batch": 64, "width": 256, "hidden": 1024},
                "512x1024x4096": {"batch": 512, "width": 1024, "hidden": 4096},
                # GPU: weights (2 x 256 MiB) far beyond L2, so the step is bound by the matmuls, not by launches.
                "2048x4096x16384": {"batch": 2048, "width": 4096, "hidden": 16384},
                # the transforms pillar's CPU size: 16 per-example gradients and 256 VJPs per Jacobian stay cheap
                "16x64x256": {"batch": 16, "width": 64, "hidden": 256},
            },
            gen.mlp,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="aa69dfd2570a9c2a", size_words="batch {batch}, width {width}, hidden {hidden}",
            dtypes=MATMUL_DTYPES, bfloat16_tolerance=6e-2,
            styles=STYLES,  # jax.nn.silu keeps two more arrays of its input's shape than F.silu
            grid=grid({
                ("GradStep", "GraphCost", "CompileSeconds", "RematCost"): on("64x256x1024", cuda="2048x4096x16384"),
                ("EngineStep", "paired.engine", "gpucheck"): on("64x256x1024", cuda="512x1024x4096"),
                # an overhead-bound size and a compute-bound one
                ("Forward",): on("tiny", "64x256x1024", cuda=("64x256x1024", "2048x4096x16384")),
                ("paired.inference",): on("64x256x1024", cuda="2048x4096x16384"),  # one of Forward's sizes
                ("ForwardMemory",): on("512x1024x4096", cuda="2048x4096x16384"),
                ("saved",): on("64x256x1024"),
                ("TransformStep", "TransformMemory", "TransformSaved", "paired.transforms"): on(
                    "16x64x256", cuda="64x256x1024"),
                # tape-vs-trace distributed: a batch that splits over 1, 2 and 4 ranks (the CUDA size over 8 too)
                ("distributed",): on("64x256x1024", cuda="512x1024x4096"),
            }),
        ),
        WorkloadSpec(
            "linear_gelu",
            "gelu(x @ W.T + b), exact (erf) GELU",
            ("plain",),
            {"tiny": {"batch": 2, "width": 16}, "8x4096": {"batch": 8, "width": 4096}},
            gen.linear_gelu,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="39dbd427f1ac1016", size_words="batch {batch}, width {width}",
            dtypes=MATMUL_DTYPES, bfloat16_tolerance=2.4e-2,
            # what the tape keeps of one layer: x, the linear output and a reference to the 64 MiB weight
            grid=grid({("saved",): on("8x4096")}),
        ),
        WorkloadSpec(
            "swiglu",
            "(silu(x @ w_gate) * (x @ w_up)) @ w_down; 'custom' fuses silu(gate) * up with a hand-written backward",
            ("plain", "custom"),
            {
                "tiny": {"batch": 4, "width": 8, "hidden": 16},
                "64x256x1024": {"batch": 64, "width": 256, "hidden": 1024},
                "2048x1024x4096": {"batch": 2048, "width": 1024, "hidden": 4096},
            },
            gen.swiglu,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="b73015aba9be3803", size_words="batch {batch}, width {width}, hidden {hidden}",
            dtypes=MATMUL_DTYPES, bfloat16_tolerance=3.8e-2,
            styles=STYLES,
            grid=grid({
                ("CustomStep", "CustomMemory", "paired.custom"): on("64x256x1024", cuda="2048x1024x4096"),
                ("saved",): on("64x256x1024"),
            }),
        ),
        WorkloadSpec(
            "transformer",
            "pre-LayerNorm blocks: causal self-attention + SwiGLU MLP",
            ("plain", "remat_full", "remat_dots", "remat_names", "remat_offload", "remat_every2"),
            {
                "tiny": {"layers": 2, "batch": 2, "seq": 4, "width": 8, "heads": 2, "ffn": 16},
                "L4-B4-S64-D128": {"layers": 4, "batch": 4, "seq": 64, "width": 128, "heads": 4, "ffn": 512},
                "L8-B4-S64-D128": {"layers": 8, "batch": 4, "seq": 64, "width": 128, "heads": 4, "ffn": 512},
                "L12-B8-S1024-D1024": {
                    "layers": 12, "batch": 8, "seq": 1024, "width": 1024, "heads": 16, "ffn": 4096,
                },
                # The GPU remat curve's second depth (tape_vs_trace.side.paired).
                "L24-B8-S1024-D1024": {
                    "layers": 24, "batch": 8, "seq": 1024, "width": 1024, "heads": 16, "ffn": 4096,
                },
                # The compile-time depth series (CompilePhases): small arrays, so the first call is the compile.
                **{f"L{n}-B2-S32-D64": {"layers": n, "batch": 2, "seq": 32, "width": 64, "heads": 2, "ffn": 256}
                   for n in (1, 2, 4, 8, 16)},
            },
            gen.transformer,
            lambda s: (s["batch"], s["seq"], s["width"]),
            inputs_digest="7a9ad15051696181", size_words="{layers} layers, batch {batch}, {seq} tokens, width {width}",
            dtypes=MATMUL_DTYPES, bfloat16_tolerance=9.2e-2,
            formulations=FORMULATIONS,
            styles=STYLES,
            attentions=ATTENTIONS,
            grid=grid({
                ("GradStep", "GraphCost", "ForwardRecording", "ForwardMemory", "gpucheck"): on(
                    "L4-B4-S64-D128", cuda="L12-B8-S1024-D1024"),
                # a cold torch.compile of the transformer takes half a minute per process on a 2-core CPU
                ("CompileSeconds",): on(cuda="L12-B8-S1024-D1024"),
                # the remat curve: every policy at the first depth, the granularity at twice the depth
                ("RematCurve",): on("L4-B4-S64-D128", "L8-B4-S64-D128",
                                      cuda=("L12-B8-S1024-D1024", "L24-B8-S1024-D1024")),
                ("saved",): on("L4-B4-S64-D128"),
                ("distributed",): on("L4-B4-S64-D128", cuda="L12-B8-S1024-D1024"),
                ("CompilePhases",): on(*(f"L{n}-B2-S32-D64" for n in (1, 2, 4)),
                                       cuda=tuple(f"L{n}-B2-S32-D64" for n in (1, 2, 4, 8, 16))),
            }),
        ),
        WorkloadSpec(
            "chain",
            "depth x (y = tanh(y * scale + shift)), [batch, width] with [width] broadcast",
            ("plain",),
            {
                "tiny": {"depth": 3, "batch": 2, "width": 4},
                # XLA's CPU compile time of the jitted gradient grows faster than linearly with depth: the CPU suite
                # uses depth 50.
                "d50-4x64": {"depth": 50, "batch": 4, "width": 64},
                "d100-4x64": {"depth": 100, "batch": 4, "width": 64},
                "d100-256x4096": {"depth": 100, "batch": 256, "width": 4096},
                # The compile-time depth series (CompilePhases), a geometric one.
                **{f"d{n}-4x64": {"depth": n, "batch": 4, "width": 64} for n in (8, 16, 32, 64, 128, 256, 512)},
            },
            gen.chain,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="68f75c7a6e1d9544", size_words="{depth} tanh layers, batch {batch}, width {width}",
            grid=grid({
                ("GradStep", "GraphCost", "ForwardRecording"): on("d50-4x64", cuda="d100-256x4096"),
                ("saved",): on("d50-4x64"),
                ("CompilePhases",): on(*(f"d{n}-4x64" for n in (8, 16, 32)),
                                       cuda=tuple(f"d{n}-4x64" for n in (8, 16, 32, 64, 128, 256, 512))),
            }),
        ),
        WorkloadSpec(
            "fanout",
            "base = x * scale + shift shared by `branches` branches sum_i tanh(base * (1 + i / branches))",
            ("plain",),
            {
                "tiny": {"branches": 3, "batch": 2, "width": 4},
                "b64-4x64": {"branches": 64, "batch": 4, "width": 64},
                "b64-256x4096": {"branches": 64, "batch": 256, "width": 4096},
            },
            gen.fanout,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="c3deeb4520d8d2b8", size_words="{branches} branches, batch {batch}, width {width}",
            # the engine's per-node cost where one input feeds many nodes: recording the fan-out's forward, and
            # what its tape keeps; outside make bench's cited rows (GradStep, EngineStep and counts are cited)
            grid=grid({("ForwardRecording",): on("b64-4x64", cuda="b64-256x4096"), ("saved",): on("b64-4x64")}),
        ),
        WorkloadSpec(
            "gmm",
            "ADBench Gaussian mixture objective; 'custom' uses a logsumexp with a hand-written backward",
            ("plain", "custom"),
            {
                "tiny": {"d": 2, "k": 3, "n": 5},
                "d10-K25-n1000": {"d": 10, "k": 25, "n": 1000},
                "d64-K100-n10000": {"d": 64, "k": 100, "n": 10000},
            },
            gen.gmm,
            gen.scalar_output,
            inputs_digest="c8706ff382b3a9d0", size_words="{n} points, {k} components, {d} dimensions",
            grid=grid({
                ("CustomStep", "CustomMemory", "paired.custom", "CompileSeconds"): on(
                    "d10-K25-n1000", cuda="d64-K100-n10000"),
                ("saved",): on("d10-K25-n1000"),
            }),
        ),
        WorkloadSpec(
            "lstm",
            "ADBench diagonal LSTM objective over a character sequence",
            ("plain", "remat_full"),
            {
                "tiny": {"layers": 2, "chars": 5, "bits": 3},
                "l2-c128-b14": {"layers": 2, "chars": 128, "bits": 14},
                "l4-c1024-b1024": {"layers": 4, "chars": 1024, "bits": 1024},
                # the CPU's op-by-op size: op-by-op JAX dispatches every op of every time step from Python
                "l2-c32-b14": {"layers": 2, "chars": 32, "bits": 14},
            },
            gen.lstm,
            gen.scalar_output,
            inputs_digest="0d32254f7c31acac", size_words="{layers} layers, {chars} characters",
            formulations=FORMULATIONS,
            grid=grid({
                # l2-c32-b14: the CPU's op-by-op pair (benchmarks/recording.py's LSTM_CPU_EAGER_SIZE)
                ("GradStep",): on("l2-c128-b14", "l2-c32-b14", cuda="l2-c128-b14"),
                ("GraphCost", "RematCost", "saved"): on("l2-c128-b14"),
            }),
        ),
    )
}

check_grid(WORKLOADS)
