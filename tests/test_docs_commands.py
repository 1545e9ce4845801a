"""Every command block of README.md and docs/ marked runnable runs, and exits 0.

A shell block (```` ```bash ````, ```` ```console ````, ```` ```sh ````) must say what it is on
the line just before its fence:

- ``<!-- runnable -->``: this test runs it (``<!-- runnable timeout=50 -->`` gives it more
  than the default 40 s). A ``bash`` block runs as one ``bash -e`` script; in a ``console``
  block only the lines after ``$ `` (with their ``\\`` continuations) run, the rest is the
  output the page shows, which the commands must print (see below).
  ``<!-- runnable continues -->`` runs the block after the page's previous runnable block, in
  the same folder and shell (a tutorial's steps): the chain is one test.
  ``<!-- runnable needs=chromium-headless-shell -->`` names programs the block needs (comma
  separated) beside the test web: without one the test is skipped, as the suite's other tests
  of those programs are.
- ``<!-- not-runnable: WHY -->``: a command this machine cannot run in a test (a real site, a
  remote Redis, Docker), with the reason; :func:`test_every_shell_block_is_marked` fails on a
  block that says neither.

Each block runs in a fresh temporary folder holding links to the repository's ``.venv``,
``examples/``, ``scripts/``, ``src/``, ``tests/`` and ``benchmarks/`` (so
``.venv/bin/gossamer`` and ``PYTHONPATH=. .venv/bin/python -m tests...`` work as written), in a
network namespace of its own (``unshare -rn``: only a loopback nobody else uses), so every
block may serve the bundled test web on port 8080 while others run beside it, and nothing can
leave the machine. A line
that starts a server in the background (ending in ``&`` and naming ``--port N``,
``--metrics-port N`` or ``--bind HOST:N``) is followed by a wait until port N answers, as a
reader waits for it before typing the next command. Whatever the block left running is ended
when it ends (an EXIT trap, then the process group).

The output a ``console`` block shows under a command is compared with what the command printed
(stdout and stderr), numbers aside: a run of digits (with its decimals) matches any other,
spaces and line breaks count as one space, and a line ``...`` (or a line ending in ``...``,
its last word cut) stands for anything. A command in the foreground prints what the page
shows and nothing else; one in the background (a server, its output sent to a file of its
own) prints what the page shows among other lines.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHELLS = ("bash", "sh", "shell", "console")
LINKED = ("examples", "scripts", "src", "tests", "benchmarks")
DEFAULT_TIMEOUT = 40.0
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+)(?P<lang>[\w-]*)")
_MARK = re.compile(r"^\s*<!--\s*(?P<kind>runnable|not-runnable)(?P<rest>[^>]*)-->\s*$")
_PORT = re.compile(r"(?:--(?:metrics-)?port[ =]|--bind[ =]\S*:)(\d+)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SHOWN_SPLIT = re.compile(r"^@@docs-command (\d+)@@$", re.MULTILINE)
_PRELUDE = """\
: "${DOCS_OUTPUT:?the folder for the output of background commands}"
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
__wait_port() {
    for _ in $(seq 400); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing answers on port $1" >&2
    return 1
}
"""


@dataclass(frozen=True)
class Block:
    """One fenced shell block of a page: where it is, its marker and its text."""

    page: str
    line: int
    lang: str
    mark: str | None
    options: str
    text: str

    @property
    def ident(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def timeout(self) -> float:
        found = re.search(r"timeout=(\d+)", self.options)
        return float(found.group(1)) if found else DEFAULT_TIMEOUT

    @property
    def needs(self) -> list[str]:
        found = re.search(r"needs=(\S+)", self.options)
        return found.group(1).split(",") if found else []

    @property
    def continues(self) -> bool:
        return "continues" in self.options.split()


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    """The fenced shell blocks of one page, each with the marker on the line before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if opened is None:
            index += 1
            continue
        end = index + 1
        closing = opened["indent"] + opened["fence"]
        while end < len(lines) and not lines[end].startswith(closing):
            end += 1
        if opened["lang"] in SHELLS:
            mark = _MARK.match(lines[index - 1]) if index else None
            body = "\n".join(line[len(opened["indent"]) :] for line in lines[index + 1 : end])
            found.append(
                Block(
                    page=str(path.relative_to(ROOT)),
                    line=index + 1,
                    lang=opened["lang"],
                    mark=mark["kind"] if mark else None,
                    options=mark["rest"].strip() if mark else "",
                    text=body,
                )
            )
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks_of(page)]


def chains() -> list[tuple[Block, ...]]:
    """The runnable blocks, each with the blocks that continue it (in page order)."""
    found: list[list[Block]] = []
    for block in all_blocks():
        if block.mark != "runnable":
            continue
        if block.continues and found and found[-1][0].page == block.page:
            found[-1].append(block)
        else:
            found.append([block])
    return [tuple(chain) for chain in found]


@dataclass(frozen=True)
class Command:
    """One command of a ``console`` block and the output the page shows under it."""

    text: str
    shown: tuple[str, ...]

    @property
    def background(self) -> bool:
        return self.text.rstrip().endswith("&") and not self.text.rstrip().endswith("&&")


def console_commands(block: Block) -> list[Command]:
    """The commands of a ``console`` block (after ``$ ``, with their continuations), each with
    the lines below it up to the next."""
    found: list[Command] = []
    command: list[str] = []
    shown: list[str] = []
    continuing = False
    for line in block.text.splitlines():
        if continuing or line.startswith("$ "):
            if not continuing and command:
                found.append(Command("\n".join(command), tuple(shown)))
                command, shown = [], []
            command.append(line if continuing else line[2:])
            continuing = line.rstrip().endswith("\\")
        elif command:
            shown.append(line)
    if command:
        found.append(Command("\n".join(command), tuple(shown)))
    return found


def script_of(*chain: Block) -> str:
    """The commands of blocks as one bash script, a port wait after each server started; each
    command of a ``console`` block is announced by a line of its number (0 before the other
    blocks) and sends its output to ``$DOCS_OUTPUT/N`` when it runs in the background."""
    script = [_PRELUDE]
    number = 0
    for block in chain:
        if block.lang != "console":
            script.append(_mark(0) + _commands(block.text.splitlines()))
            continue
        for command in console_commands(block):
            number += 1
            text = command.text
            if command.background:
                text = f'{text.rstrip()[:-1].rstrip()} >"$DOCS_OUTPUT/{number}" 2>&1 &'
            script.append(_mark(number) + _commands(text.splitlines()))
    return "".join(script)


def _mark(number: int) -> str:
    return f"printf '\\n@@docs-command {number}@@\\n'\n"


def _commands(lines: list[str]) -> str:
    script: list[str] = []
    command: list[str] = []
    for line in lines:
        command.append(line)
        if line.rstrip().endswith("\\"):
            continue
        joined = "\n".join(command)
        script.append(joined)
        port = _PORT.search(joined)
        if joined.rstrip().endswith("&") and port:
            script.append(f"__wait_port {port.group(1)}")
        command = []
    script.extend(command)
    return "\n".join(script) + "\n"


def shown_pattern(shown: tuple[str, ...]) -> re.Pattern[str]:
    """What a command's output must be, from the lines the page shows: numbers as any number,
    spacing as one space, ``...`` as anything (see the module's docstring)."""
    pieces: list[str] = []
    for line in shown:
        text = line.strip()
        cut = text.endswith("...")
        if cut:
            text = re.sub(r"[\w-]*\.\.\.$", "", text)
        if normal := _normal(text):
            pieces.append(re.escape(normal))
        if cut:
            pieces.append(".*")
    return re.compile(" ?".join(pieces), re.DOTALL)


def _normal(text: str) -> str:
    return " ".join(_NUMBER.sub("0", text).split())


def shown_mismatches(chain: tuple[Block, ...], output: str, logs: Path) -> list[str]:
    """The commands of the chain's ``console`` blocks whose output is not what the page shows
    (``output``: the script's, split by its command marks; ``logs``: background outputs)."""
    parts = _SHOWN_SPLIT.split(output)
    printed = dict(zip(parts[1::2], parts[2::2], strict=True))
    problems: list[str] = []
    number = 0
    for block in chain:
        if block.lang != "console":
            continue
        for command in console_commands(block):
            number += 1
            pattern = shown_pattern(command.shown)
            if command.background:
                log = logs / str(number)
                text = log.read_text(errors="replace") if log.exists() else ""
                found = pattern.search(_normal(text)) is not None
            else:
                text = printed.get(str(number), "")
                found = pattern.fullmatch(_normal(text)) is not None
            if not found:
                shown = "\n".join(command.shown)
                problems.append(
                    f"{block.ident}: $ {command.text}\n--- the page shows:\n{shown}\n"
                    f"--- it printed:\n{text.strip()}"
                )
    return problems


def _workdir(tmp_path: Path) -> Path:
    tmp_path.mkdir()
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def _namespaced(script: Path) -> list[str]:
    """bash running the script in a network namespace of its own, its loopback up."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("the docs' commands run in a network namespace: unshare (util-linux) missing")
    inner = f'ip link set lo up && exec bash -e "{script}"'
    return [unshare, "--user", "--map-root-user", "--net", "bash", "-c", inner]


RUNNABLE = [
    pytest.param(
        chain,
        id=chain[0].ident,
        marks=pytest.mark.timeout(sum(block.timeout for block in chain) + 15),
    )
    for chain in chains()
]


@pytest.mark.parametrize("chain", RUNNABLE)
def test_runnable_block(chain: tuple[Block, ...], tmp_path: Path) -> None:
    """The block's commands run in a fresh folder against their own loopback, exit 0 and print
    what the page shows."""
    block = chain[0]
    missing = [name for each in chain for name in each.needs if shutil.which(name) is None]
    if missing:
        pytest.skip(f"{block.ident} needs {', '.join(missing)}")
    timeout = sum(each.timeout for each in chain)
    work = _workdir(tmp_path / "work")
    script = tmp_path / "block.sh"
    script.write_text(script_of(*chain), encoding="utf-8")
    logs = tmp_path / "background"
    logs.mkdir()
    path = f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "DOCS_OUTPUT": str(logs)}
    process = subprocess.Popen(
        _namespaced(script),
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"{block.ident} still ran after {timeout:.0f} s:\n{output.decode()}")
    finally:
        _kill_group(process.pid)
    text = output.decode(errors="replace")
    assert process.returncode == 0, f"{block.ident} exited {process.returncode}:\n{text}"
    problems = shown_mismatches(chain, text, logs)
    assert not problems, "\n\n".join(problems)


def _kill_group(pgid: int) -> None:
    """Ends what a block left running in the background (servers it started)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def test_every_block_names_its_language() -> None:
    """A bare fence would hide a command from the marker check: each names a language."""
    bare = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in pages()
        for number, fence in _opening_fences(page)
        if not fence["lang"]
    ]
    assert bare == []


def _opening_fences(path: Path) -> list[tuple[int, re.Match[str]]]:
    found = []
    closing: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if closing is not None:
            closing = None if line.startswith(closing) else closing
            continue
        opened = _FENCE.match(line)
        if opened:
            found.append((number, opened))
            closing = opened["indent"] + opened["fence"]
    return found


def test_every_shell_block_is_marked() -> None:
    """No page shows a command without saying whether it is run by this test."""
    unmarked = [block.ident for block in all_blocks() if block.mark is None]
    assert unmarked == []
    unexplained = [
        block.ident
        for block in all_blocks()
        if block.mark == "not-runnable" and not block.options.lstrip(":").strip()
    ]
    assert unexplained == []


def test_the_marker_is_found() -> None:
    """The parser sees markers, console prompts, continuations and background servers."""
    page = ROOT / "README.md"
    assert any(block.mark == "runnable" for block in blocks_of(page))
    block = Block(
        page="x.md",
        line=1,
        lang="console",
        mark="runnable",
        options="timeout=50 needs=redis-server,jq",
        text="$ serve --port 8099 &\n$ crawl a \\\n    b\noutput line\n$ echo done",
    )
    script = script_of(block)
    assert (
        'serve --port 8099 >"$DOCS_OUTPUT/1" 2>&1 &\n__wait_port 8099\n'
        "printf '\\n@@docs-command 2@@\\n'\ncrawl a \\\n    b\n"
        "printf '\\n@@docs-command 3@@\\n'\necho done\n"
    ) in script
    assert "output line" not in script
    assert [command.shown for command in console_commands(block)] == [(), ("output line",), ()]
    assert block.timeout == 50.0
    assert block.needs == ["redis-server", "jq"]


def test_shown_output_is_compared(tmp_path: Path) -> None:
    """Numbers, spacing and ``...`` aside, a command prints what the page shows: a line it
    prints that the page does not show is a difference too; a server's output may hold more."""
    text = (
        "$ serve --port 8099 &\nserving on 127.0.0.1:8099\n"
        "$ crawl\ncrawled 30 pages in 2.7s\n...\n$ ls out\ncrawl.db  pages.jsonl\n"
        "$ token\nopen http://127.0.0.1:8077/?token=f0HbX6Zn..."
    )
    block = Block("x.md", 1, "console", "runnable", "", text)
    (tmp_path / "1").write_text("started\nserving on 127.0.0.1:8123\n")
    printed = (
        "@@docs-command 2@@\ncrawled 41 pages in 3.25s\nstatuses: 200: 41\n"
        "@@docs-command 3@@\ncrawl.db\npages.jsonl\n"
        "@@docs-command 4@@\nopen http://127.0.0.1:8077/?token=Xq3zz\n"
    )
    assert shown_mismatches((block,), printed, tmp_path) == []
    stale = printed.replace("pages.jsonl\n", "pages.jsonl\nstats.json\n")
    assert [problem.split("\n")[0] for problem in shown_mismatches((block,), stale, tmp_path)] == [
        "x.md:1: $ ls out"
    ]
    (tmp_path / "1").write_text("address already in use\n")
    assert len(shown_mismatches((block,), printed, tmp_path)) == 1
