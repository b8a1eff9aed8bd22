"""tape_vs_trace.report.native_peak_section: the page names the method, divides like modes only, and draws the remat
curve from the curve selection's rows."""

from __future__ import annotations

import html
import os

from tape_vs_trace.report import native_peak_section
from tape_vs_trace.results import native_peak_rows
from tests.results.test_native_peak_rows import METHOD, _row, write_results


def test_the_page_divides_like_modes_only(tmp_path) -> None:
    results = write_results(tmp_path)
    out = tmp_path / "report"
    out.mkdir()
    assert native_peak_section.write(results, out) == [native_peak_section.PAGE]
    page = (out / native_peak_section.PAGE).read_text()
    ratios = page.split("## JAX / PyTorch")[1]
    assert METHOD in page and "| 1.500 |" in ratios
    assert "compiled" not in ratios  # the compiled rows are of different workloads: no like pair


def test_the_page_draws_the_curve_from_curve_rows(tmp_path) -> None:
    folder = tmp_path / "native-peak"
    folder.mkdir()
    # the check's run of the plain point first: the case is on the curve whichever selection is listed first
    native_peak_rows.write(folder / "m-cccccccc.csv", [_row("torch", 4 << 20, 1, workload="transformer")] + [
        _row(fw, peak, selection="curve", variant=v, workload="transformer")
        for fw in ("torch", "jax") for v, peak in (("plain", 4 << 20), ("remat_full", 2 << 20))])
    [curve] = native_peak_rows.curves(folder)["m"]
    assert len(curve) == 4
    out = tmp_path / "report"
    out.mkdir()
    names = native_peak_section.write(tmp_path, out)
    assert names[1:] == ["native_peak_curve_m_64x256x1024.png"] and (out / names[1]).stat().st_size > 0


def test_a_newer_small_file_keeps_the_older_curve_and_names_each_rows_commit(tmp_path) -> None:
    folder = tmp_path / "native-peak"
    folder.mkdir()
    curve = [_row(fw, peak, selection="curve", variant=v, workload="transformer", commit="a" * 40)
             for fw in ("torch", "jax") for v, peak in (("plain", 4 << 20), ("remat_full", 2 << 20))]
    old = native_peak_rows.write(folder / "m-aaaaaaaa.csv", curve)
    new = native_peak_rows.write(folder / "m-bbbbbbbb.csv", [_row(fw, 1 << 20, mode="compiled", commit="b" * 40)
                                                             for fw in ("torch", "jax")])
    os.utime(old, (2e9, 2e9))
    os.utime(new, (2e9 + 1, 2e9 + 1))
    out = tmp_path / "report"
    out.mkdir()
    names = native_peak_section.write(tmp_path, out)
    page = (out / native_peak_section.PAGE).read_text()
    assert names[1:] == ["native_peak_curve_m_64x256x1024.png"]
    assert "every peak from native-peak/m-aaaaaaaa.csv (commit aaaaaaaa)" in page
    peaks = page.split("### Peaks")[1].split("### JAX")[0]
    assert "| aaaaaaaa |" in peaks and "| bbbbbbbb |" in peaks


def test_the_dashboard_page_links_from_asvs_index(tmp_path) -> None:
    results, site = write_results(tmp_path), tmp_path / "site"
    site.mkdir()
    assert native_peak_section.publish(results, site, "bootstrap.css")
    page = (site / native_peak_section.HTML_PAGE).read_text()
    assert html.escape(METHOD) in page and "<td>1.500</td>" in page
    index = '<ul class="nav navbar-nav navbar-left"><li>Graphs</li></ul>'
    assert native_peak_section.HTML_PAGE in native_peak_section.link(index)
    assert not native_peak_section.publish(tmp_path / "none", site, "bootstrap.css")


def _point(framework: str, variant: str, budget: str, mode: str = "compiled", step_s: float = 1.0) -> dict:
    return {"framework": framework, "workload": "transformer", "size": "L4", "mode": mode, "formulation": "unrolled",
            "attention": "", "variant": variant, "budget": budget, "step_s": step_s, "commit": "e" * 40}


def test_a_curve_point_takes_the_suites_time_where_the_suite_timed_it_and_says_where_not() -> None:
    times = {("m", "torch", "transformer", "L4", "compiled", "unrolled", "written", "budget 0.5"):
             (0.03, 0.02, 0.04, "c" * 40),
             ("m", "torch", "transformer", "L4", "compiled", "unrolled", "written", "budget 0"):
             (0.05, 0.04, 0.06, "c" * 40),
             ("m", "jax", "transformer", "L4", "compiled", "unrolled", "written", "remat_full"):
             (0.07, 0.06, 0.08, "c" * 40),
             ("m", "jax", "transformer", "L4", "eager", "unrolled", "fused", "remat_full"): (0.5, 0.4, 0.6, "c" * 40)}
    points = [_point("torch", "plain", "0.5"), _point("torch", "plain", "0"), _point("jax", "remat_full", ""),
              _point("jax", "remat_full", "", mode="eager", step_s=0.9)]
    drawn = native_peak_section.timed(points, "m", times)
    assert [(p["time_s"], p["suite"]) for p in drawn] == [(0.03, True), (0.05, True), (0.07, True), (0.9, False)]
    assert drawn[0]["time_low"] == 0.02 and drawn[0]["time_commit"] == "c" * 40
    assert drawn[3]["time_low"] != drawn[3]["time_low"]  # the process's own time has no interval
    assert native_peak_section.timed(points, "other", times)[0]["suite"] is False  # another machine's time: not this
    # the eager point's program writes its attention out: the suite's fused-attention time is another program's


def test_the_committed_curve_draws_the_suites_compiled_times_from_its_paired_remat_experiment() -> None:
    from pathlib import Path

    results = Path(__file__).resolve().parents[2] / "results"
    times = native_peak_section.suite_times(results)
    curves = native_peak_rows.curves(results / native_peak_section.FOLDER)
    machine, [points, *_] = next(iter(curves.items()))
    drawn = native_peak_section.timed(points, machine, times)
    compiled = [p for p in drawn if p["framework"] == "torch" and p["mode"] == "compiled"]
    assert compiled and all(p["suite"] and p["time_low"] <= p["time_s"] <= p["time_high"] for p in compiled)
    assert {p["time_s"] for p in compiled} <= {t[0] for t in times.values()}
