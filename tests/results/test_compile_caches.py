"""Both frameworks' persistent compilation caches: TVT_COMPILE_CACHE reaches each (a fresh process per framework, as
the setting is process-wide), a cold first_compiled_call never reads the configured cache, the state a run starts
with is recorded ("cold", "warm") and stored by scrub-results, and make bench hands the setting to asv and the
paired runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from implementations import frameworks
from tape_vs_trace.results import compile_caches, machine, run_record

ROOT = Path(__file__).resolve().parents[2]
_FRAMEWORK_CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR")


def _in_fresh_process(script: str, cache: Path) -> dict:
    """The last stdout line of `script`, run in a new interpreter with TVT_COMPILE_CACHE=`cache`, as JSON."""
    env = {k: v for k, v in os.environ.items() if k not in _FRAMEWORK_CACHE_VARIABLES}
    env[frameworks.COMPILE_CACHE_ENV] = str(cache)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# A tiny function compiled into the configured cache, compiled again from an empty in-memory state (the control:
# the configured cache serves it), then once more through a cold first_compiled_call, which must not be served.
_JAX_COLD = """
import json
import jax, jax.numpy as jnp
from implementations import frameworks
from tape_vs_trace.results import compile_caches
fw = frameworks.load("jax")
hits = []
jax.monitoring.register_event_listener(lambda name, **_: hits.append(name == "/jax/compilation_cache/cache_hits"))
f, x = (lambda a: jnp.cos(a) * 3), jnp.arange(8.0)
jax.jit(f)(x).block_until_ready()
jax.clear_caches(); hits.clear()
jax.jit(f)(x).block_until_ready()
control, entries = sum(hits), compile_caches.state()["jax"]["entries"]
jax.clear_caches(); hits.clear()
with fw.compile_probe.first_compiled_call(f, x, cache="cold") as first_call:
    first_call()
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir, "control_hits": control, "cold_hits": sum(hits),
                  "min_secs": jax.config.jax_persistent_cache_min_compile_time_secs,
                  "min_bytes": jax.config.jax_persistent_cache_min_entry_size_bytes, "entries": entries,
                  "entries_after": compile_caches.state()["jax"]["entries"]}))
"""

_TORCH_COLD = """
import json, os
import torch
from torch._dynamo.utils import counters
from torch._inductor.runtime.cache_dir_utils import cache_dir
from implementations import frameworks
from tape_vs_trace.results import compile_caches
fw = frameworks.load("torch")
f, x = (lambda a: (a.sin() * 3).sum()), torch.ones(8, requires_grad=True)
torch.compile(f)(x).backward()
torch._dynamo.reset(); counters.clear()
torch.compile(f)(x).backward()
control = counters["inductor"]["fxgraph_cache_hit"] + counters["aot_autograd"]["autograd_cache_hit"]
entries = compile_caches.state()["torch"]["entries"]
torch._dynamo.reset(); counters.clear()
with fw.compile_probe.first_compiled_call(f, x, cache="cold") as first_call:
    inside = cache_dir()
    first_call()
cold = counters["inductor"]["fxgraph_cache_hit"] + counters["aot_autograd"]["autograd_cache_hit"]
print(json.dumps({"dir": cache_dir(), "triton": os.environ["TRITON_CACHE_DIR"], "inside": inside,
                  "control_hits": control, "cold_hits": cold, "entries": entries,
                  "entries_after": compile_caches.state()["torch"]["entries"]}))
"""


def test_jax_gets_the_folder_and_a_cold_compile_never_reads_it(tmp_path: Path) -> None:
    found = _in_fresh_process(_JAX_COLD, tmp_path / "cc")
    # Every executable is written, as Inductor writes every graph.
    assert found["dir"] == str(tmp_path / "cc" / "jax") and (found["min_secs"], found["min_bytes"]) == (0.0, -1)
    assert found["entries"] >= 1 and found["control_hits"] >= 1
    assert found["cold_hits"] == 0 and found["entries_after"] == found["entries"]


def test_torch_gets_the_folder(tmp_path: Path) -> None:
    found = _in_fresh_process("import json, os\nfrom implementations import frameworks\n"
                              "from torch._inductor.runtime.cache_dir_utils import cache_dir\n"
                              "frameworks.load('torch')\n"
                              "print(json.dumps([cache_dir(), os.environ['TRITON_CACHE_DIR']]))", tmp_path / "cc")
    assert found == [str(tmp_path / "cc" / "torch"), str(tmp_path / "cc" / "torch" / "triton")]


@pytest.mark.slow
def test_torch_cold_compile_never_reads_the_configured_folder(tmp_path: Path) -> None:
    # Slow: three Inductor compiles of a tiny function, forward and backward.
    found = _in_fresh_process(_TORCH_COLD, tmp_path / "cc")
    assert found["dir"] == str(tmp_path / "cc" / "torch") and found["entries"] >= 1 and found["control_hits"] >= 1
    assert found["cold_hits"] == 0 and found["inside"] != found["dir"]
    assert found["entries_after"] == found["entries"]


def test_torch_cold_caches_are_off_in_a_fresh_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor import config as inductor_config
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    from implementations.torch import compile_probe

    configured = str(tmp_path / "torch")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", configured)
    monkeypatch.setenv("TRITON_CACHE_DIR", os.path.join(configured, "triton"))
    with compile_probe.compile_caches("cold"):
        assert inductor_config.force_disable_caches and not os.listdir(cache_dir())
        assert not cache_dir().startswith(configured) and not os.environ["TRITON_CACHE_DIR"].startswith(configured)
    assert cache_dir() == configured and os.environ["TRITON_CACHE_DIR"] == os.path.join(configured, "triton")
    assert not inductor_config.force_disable_caches


def test_without_the_setting_each_framework_keeps_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    import jax

    monkeypatch.delenv(frameworks.COMPILE_CACHE_ENV, raising=False)
    assert frameworks.compile_cache_dir("torch") is None
    before = (jax.config.jax_compilation_cache_dir, os.environ.get("TORCHINDUCTOR_CACHE_DIR"))
    frameworks.load("jax", float64=True)
    frameworks.load("torch")
    assert (jax.config.jax_compilation_cache_dir, os.environ.get("TORCHINDUCTOR_CACHE_DIR")) == before
    assert compile_caches.state()["state"] == "defaults"


def test_the_folder_is_one_per_framework_and_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(frameworks.COMPILE_CACHE_ENV, ".asv/compile-cache")
    assert frameworks.compile_cache_dir("jax") == os.path.join(os.getcwd(), ".asv", "compile-cache", "jax")
    with pytest.raises(ValueError, match="valid choices: torch, jax"):
        frameworks.compile_cache_dir("mlx")


def test_the_state_is_cold_for_empty_folders_and_warm_after_an_entry(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / ".asv" / "compile-cache"
    monkeypatch.setenv(frameworks.COMPILE_CACHE_ENV, str(cache))
    empty = {"entries": 0, "bytes": 0}
    assert compile_caches.state(tmp_path) == {"dir": ".asv/compile-cache", "torch": empty, "jax": empty,
                                              "state": "cold"}
    (cache / "jax").mkdir(parents=True)
    assert compile_caches.state(tmp_path)["state"] == "cold"
    (cache / "jax" / "jit_f-0123-cache").write_bytes(b"x" * 10)
    found = compile_caches.state(tmp_path)
    assert found["jax"] == {"entries": 1, "bytes": 10} and found["torch"] == empty and found["state"] == "warm"
    graph = cache / "torch" / "fxgraph" / "ab" / "fabc"
    graph.mkdir(parents=True)
    (graph / "0").write_bytes(b"y")
    (cache / "torch" / "aotautograd" / "a1").mkdir(parents=True)
    (cache / "torch" / "aotautograd" / "a1" / "entry").write_bytes(b"z")
    assert compile_caches.state(tmp_path)["torch"] == {"entries": 2, "bytes": 2}
    # A folder outside the repository is named, never given as a path of the machine.
    assert compile_caches.state(tmp_path / "elsewhere")["dir"] == "(outside the repository)/compile-cache"


def test_the_state_file_is_written_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(frameworks.COMPILE_CACHE_ENV, str(tmp_path / "cc"))
    out = tmp_path / "state" / "compile-cache-state.json"
    assert compile_caches.main([str(out)]) == 0
    assert capsys.readouterr().out == "compile caches: cold ((outside the repository)/cc)\n"
    monkeypatch.setenv(compile_caches.STATE_ENV, str(out))
    assert machine.details()["compile_caches"] == json.loads(out.read_text()) == compile_caches.state()
    monkeypatch.delenv(compile_caches.STATE_ENV)
    assert compile_caches.recorded()["state"] == "not recorded"
    monkeypatch.setenv(compile_caches.STATE_ENV, str(tmp_path / "missing.json"))
    assert compile_caches.recorded() == {"state": "not recorded",
                                         "note": "unreadable TVT_COMPILE_CACHE_STATE: FileNotFoundError"}


def test_a_bad_state_path_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    assert compile_caches.main([str(tmp_path / "file" / "state.json")]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert compile_caches.main([]) == 2


def test_scrub_results_stores_the_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "results" / "m"
    folder.mkdir(parents=True)
    name = f"{'a' * 8}-existing-py_x_.venv_bin_python.json"
    (folder / name).write_text(json.dumps({"commit_hash": "a" * 40, "env_name": "x", "python": "/x/.venv/bin/python",
                                           "params": {"machine": "m"}, "result_columns": [], "results": {},
                                           "durations": {}, "version": 2}))
    state = tmp_path / "state.json"
    monkeypatch.setenv(frameworks.COMPILE_CACHE_ENV, str(ROOT / ".asv" / "compile-cache-of-a-test"))
    monkeypatch.setenv(compile_caches.STATE_ENV, str(state))
    state.write_text(json.dumps(compile_caches.state()))
    monkeypatch.setattr(run_record, "_python_version", lambda value: "3.11")
    [written] = run_record.scrub_results(tmp_path / "results")
    stored = json.loads(written.read_text())["tape_vs_trace"]["compile_caches"]
    assert stored["dir"] == ".asv/compile-cache-of-a-test" and stored["state"] == "cold"
    assert str(ROOT) not in json.dumps(stored)


def _bench_commands() -> list[str]:
    done = subprocess.run(["make", "-n", "bench", "DEVICE=cpu"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return [part.strip() for part in done.stdout.replace("\\\n", " ").split("&&")]


def test_make_bench_hands_the_folder_to_the_runner_and_the_paired_costs_and_records_its_state() -> None:
    commands = _bench_commands()
    cache, state = ROOT / ".asv" / "compile-cache", ROOT / ".asv" / "compile-cache-state.json"

    def index(text: str) -> int:
        return next(i for i, command in enumerate(commands) if text in command)

    runs = [index(s) for s in ("bin/tape-vs-trace run", "bin/tape-vs-trace paired")]
    for i in runs:
        assert f"TVT_COMPILE_CACHE={cache} " in commands[i]
    written, scrub = index("-m tape_vs_trace.results.compile_caches"), index("scrub-results")
    # The state is taken just before the run; the runner scrubs after every round, so it records it too.
    assert written < runs[0] < scrub < runs[1]
    assert commands[written].endswith(f"-m tape_vs_trace.results.compile_caches {state}")
    assert f"TVT_COMPILE_CACHE={cache} " in commands[written]
    assert f"TVT_COMPILE_CACHE_STATE={state} " in commands[scrub]
    assert f"TVT_COMPILE_CACHE_STATE={state} " in commands[runs[0]]


@pytest.mark.parametrize("configured", [None, "/somewhere/compile-cache"])
def test_the_paired_cost_workers_get_the_setting_or_a_scratch_folder(configured: str | None, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tape_vs_trace.side import paired
    from tape_vs_trace.side.paired import PairedError

    seen: list[dict] = []

    def fake_run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess:
        seen.append(kwargs["env"])  # type: ignore[arg-type]
        return subprocess.CompletedProcess(argv, 1, "", "no worker here")

    if configured is None:
        monkeypatch.delenv(frameworks.COMPILE_CACHE_ENV, raising=False)
    else:
        monkeypatch.setenv(frameworks.COMPILE_CACHE_ENV, configured)
    monkeypatch.setattr(paired.subprocess, "run", fake_run)
    with pytest.raises(PairedError, match="no worker here"):
        paired._run_costs("jax", ["x"], tmp_path)
    # One setting for both frameworks' workers: make bench's folder, else the run's scratch folder.
    assert seen[0][frameworks.COMPILE_CACHE_ENV] == (configured or str(tmp_path / "compile-cache"))


# A fused attention call, then a selective-checkpoint (remat_dots) block, compiled, then compiled again from an
# empty in-memory state: the second compile must be served by AOTAutograd's cache. Without the context_fn's
# cache_hash, or with sdpa_kernel's calls unmarked, AOTAutograd bypasses its cache on every compile.
_TORCH_SAC_SDPA = """
import json
import torch
from torch._dynamo.utils import counters
from implementations import frameworks
fw = frameworks.load("torch")
from implementations.torch import common, transformer
def block(h):
    return (h @ h.transpose(-2, -1)).sin().sum()
def step(q):
    return common.remat(block, "remat_dots")(transformer.fused_attention(q, q * 2, q * 3))
q = torch.randn(1, 2, 8, 4, requires_grad=True)
def once():
    torch._dynamo.reset(); counters.clear()
    torch.autograd.grad(torch.compile(step, dynamic=False)(q), q)
    return {k: counters["aot_autograd"][k] for k in ("autograd_cache_hit", "autograd_cache_bypass")}
print(json.dumps([once(), once()]))
"""


@pytest.mark.slow
def test_a_compiled_fused_attention_and_selective_checkpoint_are_served_from_the_cache(tmp_path: Path) -> None:
    # Slow: two Inductor compiles of a small attention block, forward and backward.
    first, second = _in_fresh_process(_TORCH_SAC_SDPA, tmp_path / "cc")
    assert first == {"autograd_cache_hit": 0, "autograd_cache_bypass": 0}
    assert second == {"autograd_cache_hit": 1, "autograd_cache_bypass": 0}


# A step through torch's scan, compiled, then compiled again from an empty in-memory state: the second compile must
# be served by AOTAutograd's cache (unmarked, the higher-order op bypasses it on every compile). The body's scale
# is set per process: a body that differs must miss the cache and give its own loss and gradient.
_TORCH_SCAN = """
import json
import torch
from torch._dynamo.utils import counters
from implementations import frameworks
fw = frameworks.load("torch")
from torch._higher_order_ops.scan import scan
from implementations.torch import steps
def body(c, x):
    n = c * 0.5 + torch.sin(x) * SCALE
    return n, n.sum()
def loss(w, xs):
    c, ys = scan(body, w, xs)
    return c.sum() + ys.sum()
xs = torch.arange(12.0).reshape(3, 4)
def once(f):
    torch._dynamo.reset(); counters.clear()
    w = torch.ones(4, requires_grad=True)
    with steps._scan_lowering("scan"):
        value = f(w, xs)
        grad, = torch.autograd.grad(value, w)
    return [value.item(), grad.tolist(), {k: counters["aot_autograd"][k] for k in ("autograd_cache_hit",
                                                                                 "autograd_cache_bypass")}]
eager = once(loss)[:2]
print(json.dumps([eager, once(torch.compile(loss, dynamic=False)), once(torch.compile(loss, dynamic=False))]))
"""


@pytest.mark.slow
def test_a_compiled_scan_is_served_from_the_cache_and_a_changed_body_is_not(tmp_path: Path) -> None:
    # Slow: three Inductor compiles of a small scan, forward and backward.
    runs = {scale: _in_fresh_process(_TORCH_SCAN.replace("SCALE", scale), tmp_path / "cc") for scale in ("1.0", "2.0")}
    for scale, (eager, first, second) in runs.items():
        assert first[2] == {"autograd_cache_hit": 0, "autograd_cache_bypass": 0}, scale
        assert second[2] == {"autograd_cache_hit": 1, "autograd_cache_bypass": 0}, scale
        # float32: a few ulps relative, and as many of the largest gradient for an element near zero
        scale = 1e-6 * max(map(abs, eager[1]))
        for compiled in (first, second):
            assert compiled[0] == pytest.approx(eager[0], rel=1e-6)
            assert compiled[1] == pytest.approx(eager[1], rel=1e-6, abs=scale)
    assert runs["1.0"][0][0] != pytest.approx(runs["2.0"][0][0], rel=1e-3)
