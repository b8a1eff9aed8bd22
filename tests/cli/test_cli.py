"""tape_vs_trace.cli's help: the commands a user runs before the plumbing of `make bench`, which is marked; a help
text for every argument of every subcommand; and every TVT_* variable the code reads, in the top-level --help."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from tape_vs_trace import cli

ROOT = Path(__file__).resolve().parents[2]
USER_COMMANDS = ["cite", "compare", "report", "run", "publish", "saved", "paired", "distributed", "first-step",
                 "calibrate"]
PLUMBING_COMMANDS = ["machine", "saved-all", "native-peak", "scrub-results"]
# Where a TVT_* variable can be read: the packages, the suite, the Makefile and the scripts.
SOURCES = ["tape_vs_trace", "implementations", "benchmarks", "scripts", "Makefile"]
NAME = re.compile(r"\bTVT_[A-Z0-9_]+")


def _subcommands() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = cli._parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return parser, sub


def test_user_commands_come_first_and_the_plumbing_after_marked() -> None:
    _, sub = _subcommands()
    listed = [(a.dest, a.help) for a in sub._choices_actions]
    assert [name for name, _ in listed] == USER_COMMANDS + PLUMBING_COMMANDS
    for name, text in listed:
        assert text.startswith(cli.PLUMBING) == (name in PLUMBING_COMMANDS), (name, text)


@pytest.mark.parametrize("name", USER_COMMANDS + PLUMBING_COMMANDS)
def test_every_argument_has_help(name: str) -> None:
    _, sub = _subcommands()
    parser = sub.choices[name]
    assert parser.description, f"{name} has no description"
    for action in parser._actions:
        shown = "/".join(action.option_strings) or action.dest
        assert action.help and action.help != argparse.SUPPRESS, f"{name} {shown} has no help text"


@pytest.mark.parametrize("name", ["cite", "report", "compare"])
def test_commands_that_read_results_take_verbose(name: str) -> None:
    """The one warning about older result files ends with "--verbose lists them by file": each of them must."""
    _, sub = _subcommands()
    assert "--verbose" in sub.choices[name]._option_string_actions


def _names_read() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for source in SOURCES:
        path = ROOT / source
        for file in [path] if path.is_file() else sorted(path.rglob("*")):
            if file.is_file() and file.suffix in ("", ".py", ".sh") and file != ROOT / "tape_vs_trace" / "cli.py":
                for name in NAME.findall(file.read_text(encoding="utf-8", errors="replace")):
                    found.setdefault(name, []).append(file.relative_to(ROOT).as_posix())
    return found


def test_every_tvt_variable_read_is_in_the_help_and_none_other() -> None:
    """A new TVT_* variable cannot be forgotten in --help, and one no longer read cannot stay there."""
    read = _names_read()
    assert "TVT_DEVICE" in read and "TVT_BUDGET_S" in read, "the scan found the sources"
    documented = {name for _, names in cli.ENVIRONMENT for name, _ in names}
    text = cli._parser().format_help()
    missing = {name: files for name, files in read.items() if not re.search(rf"\b{name}\b", text)}
    assert not missing, f"read but not in tape-vs-trace --help (add them to cli.ENVIRONMENT): {missing}"
    assert documented <= set(read), f"in --help but read nowhere: {sorted(documented - set(read))}"
    assert all(meaning for _, names in cli.ENVIRONMENT for _, meaning in names)


def test_top_level_help_exits_0_and_names_each_variable_once(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "environment variables:" in out
    assert out.index("cite") < out.index("scrub-results") < out.index("environment variables:")
    for _, names in cli.ENVIRONMENT:
        for name, _ in names:
            assert len(re.findall(rf"^\s+{name}\s", out, re.MULTILINE)) == 1, name
