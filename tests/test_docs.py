"""The README and docs/ pages: the README's length and shape, every link and anchor, no history outside
docs/history.md, and every command of their `sh` blocks, run against the committed results or, where it needs a GPU,
a network or minutes, checked to exist as written."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests import shared

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
HISTORY = ROOT / "docs" / "history.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 160
# The results section between the markers is generated (`tape-vs-trace report --readme`): a headline with its
# machine, the headline chart and a few findings. The README's own text leaves it this many lines.
REPORT_LINES = 30
START, END = "<!-- report:start -->", "<!-- report:end -->"

# Commands of the sh blocks that are checked, not run, and why. Every other command runs.
NOT_RUN = {
    "make": "every target sets up .venv and runs for minutes (bench: the suite); `make -n` checks target and variables",
    "scripts/gpu_bench.sh": "needs an NVIDIA GPU",
    "scripts/setup_offline.sh": "builds .venv from an interpreter that has torch and jax",
    "scripts/test_stack.sh": "builds a venv of about 5 GB with other framework versions, then runs the tests",
    "asv": "builds a virtualenv per framework release, then runs benchmarks: minutes",
    "tape-vs-trace publish": "runs asv publish over the git history and writes html/",
    "tape-vs-trace calibrate": "measures this host in 6 fresh processes, half a minute on a loaded 2-core host",
    "tape-vs-trace first-step": "starts fresh processes of both frameworks, a torch.compile each (about 2 minutes "
                                "at the defaults); tests/side/test_first_step.py runs its points",
    "tape-vs-trace distributed": "starts rank processes for every combination (about 45 minutes at the defaults), "
                                 "and refuses an uncommitted implementations/",
}
RUN_TIMEOUT_S = 120
# Commands that only read a results folder run in this process, through the CLI's main with the page's arguments in
# the block's sandbox: each would otherwise start an interpreter and parse the same result files again.
IN_PROCESS = ("tape-vs-trace cite", "tape-vs-trace compare")
TVT = ("tape-vs-trace", ".venv/bin/tape-vs-trace")
PYTHONS = ("python", "python3", ".venv/bin/python")
CODE_FILES = ["Makefile", "scripts/*", "tape_vs_trace/**/*.py", "implementations/**/*.py", "benchmarks/*.py"]


# -- Markdown -----------------------------------------------------------------------------------------------------

def _outside_report(text: str) -> str:
    if START in text and END in text:
        return text[:text.index(START)] + text[text.index(END) + len(END):]
    return text


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if re.match(r"\s*```", line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^\s*```{language}\n(.*?)^\s*```\s*$", text, flags=re.M | re.S)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text, lower case, punctuation dropped, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    """Every heading's anchor; a repeated heading's gets -1, -2, ... as on GitHub."""
    anchors: set[str] = set()
    counts: dict[str, int] = {}
    for line in _prose_lines(page.read_text()):
        if m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            slug = _slug(m.group(1))
            n = counts.get(slug, 0)
            counts[slug] = n + 1
            anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _links(page: Path) -> list[str]:
    """Targets of every link and image outside code (fenced blocks and inline spans)."""
    prose = "\n".join(_prose_lines(page.read_text()))
    prose = re.sub(r"`[^`\n]*`", "x", prose)
    return re.findall(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", prose)


def _link_cases() -> list[tuple[Path, str]]:
    return [(page, target) for page in PAGES for target in _links(page)]


# -- README ---------------------------------------------------------------------------------------------------------

def test_readme_text_leaves_room_for_the_results_section() -> None:
    text = README.read_text()
    assert text.count(START) == 1 and text.count(END) == 1 and text.index(START) < text.index(END)
    own = len(_outside_report(text).splitlines())
    assert own + REPORT_LINES <= MAX_README_LINES, f"README's own text is {own} lines"


def test_readme_is_at_most_160_lines() -> None:
    text = README.read_text()
    block = text[text.index(START):text.index(END)].count("\n") + 1
    assert block <= REPORT_LINES, f"the generated results section is {block} lines"
    assert len(text.splitlines()) <= MAX_README_LINES


def test_readme_opens_with_the_two_commands() -> None:
    first = re.search(r"^```(\w*)\n(.*?)^```", README.read_text(), flags=re.M | re.S)
    assert first and first.group(1) == "sh"
    commands = [shlex.split(line, comments=True) for line in first.group(2).splitlines()]
    assert commands == [["make", "bench"], ["make", "test"]]


# -- Links ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("page", "target"), _link_cases(),
                         ids=[f"{p.relative_to(ROOT)}:{t}" for p, t in _link_cases()])
def test_link_resolves(page: Path, target: str) -> None:
    if re.match(r"[a-z][a-z0-9+.-]*:", target, flags=re.I):
        url = urlparse(target)
        assert url.scheme in ("http", "https") and url.netloc and " " not in target, f"malformed link {target}"
        return
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    assert resolved.is_relative_to(ROOT), f"{target} leaves the repository"
    assert resolved.exists(), f"{target}: no such file"
    if anchor:
        assert resolved.suffix == ".md", f"{target}: an anchor into a file that is not a page"
        assert anchor in _anchors(resolved), f"{target}: no heading with that anchor in {resolved.name}"


def test_pages_keep_history_in_history() -> None:
    """No commit hash and no test file name in the prose of a page: measured history goes to docs/history.md."""
    commit = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
    test_file = re.compile(r"\btest_\w+\.py\b")
    found = [f"{page.relative_to(ROOT)}: {line.strip()}" for page in PAGES if page != HISTORY
             for line in _prose_lines(_outside_report(page.read_text()))
             if commit.search(line) or test_file.search(line)]
    assert not found, "\n".join(found)


# -- Commands -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    page: str
    block: int
    env: tuple[tuple[str, str], ...]
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join([*(f"{k}={v}" for k, v in self.env), *self.argv])

    @property
    def name(self) -> str:
        """What NOT_RUN is keyed by."""
        program = self.argv[0]
        if program in TVT:
            return f"tape-vs-trace {self.argv[1]}"
        if program.endswith("/asv") or program == "asv":
            return "asv"
        return program


def _split(block: str) -> list[list[str]]:
    """The simple commands of a block: continuation lines joined, comments dropped, split at && ; | and ||."""
    commands: list[list[str]] = []
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        current: list[str] = []
        for token in lexer:
            if set(token) <= set(";&|"):
                commands.append(current)
                current = []
            else:
                current.append(token)
        commands.append(current)
    return [c for c in commands if c]


def _commands() -> list[Command]:
    found = []
    for page in PAGES:
        for i, block in enumerate(_blocks(page.read_text(), "sh")):
            for tokens in _split(block):
                env = []
                while tokens and re.match(r"[A-Z_][A-Z0-9_]*=", tokens[0]):
                    env.append(tuple(tokens.pop(0).split("=", 1)))
                found.append(Command(str(page.relative_to(ROOT)), i, tuple(env), tuple(tokens)))
    return found


COMMANDS = _commands()


class CommandError(Exception):
    """A command of a page that does not work as written."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise CommandError(message)


def _python() -> list[str]:
    """This interpreter as the tests run it (with -S where they run without site), the checkout on its path."""
    return [sys.executable, *(["-S"] if sys.flags.no_site else [])]


def _env(extra: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])
    return {**os.environ, "PYTHONPATH": path, **dict(extra)}


def _argv(command: Command) -> list[str]:
    program, *args = command.argv
    if program in TVT:
        return [*_python(), "-m", "tape_vs_trace.cli", *args]
    if program in PYTHONS:
        return [*_python(), *args]
    if program == "cp":
        return ["cp", *args]
    raise CommandError(f"{command}: no rule to run `{program}`; add it to NOT_RUN with a reason, or a rule here")


@functools.cache
def _names_in_code() -> set[str]:
    """Every upper-case name the code mentions: the environment variables it may read."""
    return {name for pattern in CODE_FILES for p in ROOT.glob(pattern) if p.is_file()
            for name in re.findall(r"\b[A-Z_][A-Z0-9_]*\b", p.read_text(errors="replace"))}


def _help(argv: list[str]) -> str:
    done = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    _require(done.returncode == 0, f"{' '.join(argv)}: {done.stderr[-2000:]}")
    return done.stdout


def _flags(args: tuple[str, ...]) -> list[str]:
    return [a.split("=", 1)[0] for a in args if a.startswith("-")]


def _has_option(text: str, flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def _check(command: Command) -> None:
    """A command not run: the program, its target and its options exist as written."""
    program, *args = command.argv
    for name, _ in command.env:
        _require(name in _names_in_code(), f"{command}: no code reads {name}")
    if program == "make":
        target = [a for a in args if "=" not in a]
        for name in (a.split("=", 1)[0] for a in args if "=" in a):
            defined = re.search(rf"^{name}\s*\??=", (ROOT / "Makefile").read_text(), flags=re.M) is not None
            _require(defined, f"{command}: the Makefile has no variable {name}")
        done = subprocess.run(["make", "-n", *args], cwd=ROOT, env=_env(command.env), capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S)
        _require(done.returncode == 0 and bool(target), f"{command}: make -n failed: {done.stderr[-2000:]}")
    elif program.startswith("scripts/"):
        script = ROOT / program
        _require(script.is_file() and os.access(script, os.X_OK), f"{command}: {program} is not an executable file")
        text = script.read_text()
        for arg in args[1:]:  # the first names a folder to create; the others are choices of a `case`, or options
            known = re.search(rf"^\s*{re.escape(arg)}\)", text, flags=re.M) or _has_option(text, arg)
            _require(bool(known), f"{command}: {program} has no choice or option {arg}")
    elif command.name == "asv":
        sub, *rest = args
        if "--config" in rest:
            _require((ROOT / rest[rest.index("--config") + 1]).is_file(), f"{command}: no such config")
        usage = _help([*_python(), "-m", "asv", sub, "--help"])
        for flag in _flags(tuple(rest)):
            _require(_has_option(usage, flag), f"{command}: asv {sub} has no option {flag}")
    elif program in TVT:
        usage = _help([*_python(), "-m", "tape_vs_trace.cli", args[0], "--help"])
        for flag in _flags(tuple(args[1:])):
            _require(_has_option(usage, flag), f"{command}: tape-vs-trace {args[0]} has no option {flag}")
    else:
        raise CommandError(f"{command}: no rule to check `{program}`")


def _sandbox(where: Path) -> None:
    """A working copy for commands that read or write results: results/ and README.md copied, the rest linked."""
    shutil.copytree(ROOT / "results", where / "results")
    shutil.copy(README, where / "README.md")
    for entry in ROOT.iterdir():
        if entry.name not in ("results", "README.md", ".git", ".venv", ".asv", "html", "mutants"):
            (where / entry.name).symlink_to(entry)


_IN_PROCESS_LOCK = threading.Lock()  # one at a time: each changes this process's working folder and stdout


def _run_in_process(command: Command, where: Path, shared_root: Path) -> None:
    """The command through tape_vs_trace.cli.main in `where`, as `python -m tape_vs_trace.cli` would run it; each
    results folder read once a session (the sandboxes hold copies of one)."""
    from tape_vs_trace import cli

    err = io.StringIO()
    with _IN_PROCESS_LOCK, contextlib.chdir(where), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(err), shared.results_loaded_once(shared_root):
        try:
            status = cli.main(list(command.argv[1:]))
        except SystemExit as exc:  # argparse's refusal of an option
            status = exc.code
        except Exception as exc:  # what a subprocess would end with as a traceback
            raise CommandError(f"{command}: {exc.__class__.__name__}: {exc}") from exc
    _require(status == 0, f"{command}: exit {status}\n{err.getvalue()[-3000:]}")


def _run_block(commands: list[Command], shared_root: Path) -> dict[Command, str | None]:
    """Each command of one block in order, in one sandbox: None where it passed, else what went wrong."""
    outcome: dict[Command, str | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        _sandbox(where)
        for command in commands:
            try:
                if command.name in NOT_RUN:
                    _check(command)
                elif command.name in IN_PROCESS and not command.env:
                    _run_in_process(command, where, shared_root)
                else:
                    argv = _argv(command)
                    done = subprocess.run(argv, cwd=where, env=_env(command.env), capture_output=True, text=True,
                                          timeout=RUN_TIMEOUT_S)
                    _require(done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr[-3000:]}")
                outcome[command] = None
            except (CommandError, OSError, subprocess.SubprocessError) as exc:
                outcome[command] = f"{exc.__class__.__name__}: {exc}"
    return outcome


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, shared_root: Path) -> dict[Command, str | None]:
    """The commands of every block with a selected test, the blocks in parallel (each runs its commands in order)."""
    selected = {item.callspec.params["command"] for item in request.session.items
                if getattr(item, "callspec", None) and "command" in item.callspec.params}
    blocks: dict[tuple[str, int], list[Command]] = {}
    for command in COMMANDS:
        if any((c.page, c.block) == (command.page, command.block) for c in selected):
            blocks.setdefault((command.page, command.block), []).append(command)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = list(pool.map(functools.partial(_run_block, shared_root=shared_root), blocks.values()))
    return {c: o for r in results for c, o in r.items()}


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c.page}:{c}" for c in COMMANDS])
def test_command_works_as_written(command: Command, outcomes: dict[Command, str | None]) -> None:
    if outcomes[command] is not None:
        pytest.fail(outcomes[command], pytrace=False)


def test_commands_not_run_are_the_pages_own() -> None:
    names = {c.name for c in COMMANDS}
    stale = set(NOT_RUN) - names
    assert not stale, f"reasons kept for commands no page has: {sorted(stale)}"
    assert any(c.name not in NOT_RUN for c in COMMANDS), "no command of the pages is run"


def test_subcommands_named_in_the_pages_exist() -> None:
    from tape_vs_trace import cli

    subcommands = {command.name for command in cli.COMMANDS}
    named = {m for page in PAGES for m in re.findall(r"`(?:\.venv/bin/)?tape-vs-trace ([a-z][a-z-]*)",
                                                       _outside_report(page.read_text()))}
    assert named - subcommands == set(), f"pages name subcommands the CLI lacks: {sorted(named - subcommands)}"
