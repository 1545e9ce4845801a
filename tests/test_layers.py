"""The package's layering: no import cycles between gossamer's modules, and the engine knows
its sinks by their protocols only.

The import graph is read from the source (every ``import`` statement: at module level, in a
function, under ``TYPE_CHECKING``), so a cycle hidden in a function-level import is caught
too. Importing ``a.b.c`` runs the ``__init__`` of ``a.b`` first, so it counts as an import of
each package on the way that the importer is not inside already.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gossamer

ROOT = Path(gossamer.__file__).parent


def module_files() -> dict[str, Path]:
    """Every gossamer module by dotted name (a package by its own name)."""
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = ["gossamer", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path) -> Iterator[str]:
    """The dotted names ``module`` imports (absolute; for ``from x import y`` both ``x.y``
    and ``x``, the caller keeps those that are modules)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """Module -> the gossamer modules whose import it runs."""
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges = set()
        for name in imported_names(module, path):
            while name and name not in modules:  # ``from pkg.mod import function``
                name = name.rpartition(".")[0]
            while name.startswith("gossamer.") and not module.startswith(name + "."):
                edges.add(name)  # the module and each package on its way in
                name = name.rpartition(".")[0]
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return found


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "gossamer.cluster.cli" in graph["gossamer.cli"]  # module level
    assert "gossamer.balance.plan" in graph["gossamer.cli"]  # in a function
    assert "gossamer.fetch.exchange" in graph["gossamer.sinks.base"]  # under TYPE_CHECKING
    assert "gossamer.fetch" in graph["gossamer.sinks.warc"]  # the package's __init__ runs
    assert "gossamer.fetch" not in graph["gossamer.fetch.http"]  # its own package: no


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


RANKS = (
    # values and helpers, the settings and their flags
    "addresses urls tracking redact safe errors retry stats outcomes crawldb tls usercode proxyurl"
    " logs progress settings flags eventloop",
    # the stages, and the WACZ packager of what the WARC sink wrote
    "parse extract fetch frontier sinks hooks digests focus discover balance testweb wacz",
    "page",  # a fetched page's steps, over parse, extract, hooks and digests
    "engine ledger robots_fetch",
    "metrics status",  # what a running crawl reports
    "crawl",
    "cluster rules_cli",
    "api",  # the Python API, over the crawl and the cluster
    "ui",
    "cli __main__",
)
"""Every top-level module and package of gossamer by layer, lowest first (see the package
docstring), names apart by spaces: a package imports from its own layer and lower ones only."""


def package_of(module: str) -> str:
    """The top-level module or package ``module`` belongs to (``gossamer``: the root)."""
    return module.split(".")[1] if module.count(".") else module


def package_graph() -> dict[str, set[str]]:
    """Top-level package -> the top-level packages whose import it runs (the root's
    ``__init__``, which every import runs, left out)."""
    graph: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        outside = {package_of(m) for m in imported} - {package_of(module), "gossamer"}
        graph.setdefault(package_of(module), set()).update(outside)
    graph.pop("gossamer", None)
    return graph


def test_every_package_has_a_rank() -> None:
    ranked = [name for rank in RANKS for name in rank.split()]
    assert len(ranked) == len(set(ranked))
    assert set(ranked) == set(package_graph())


def test_packages_import_only_their_rank_and_lower() -> None:
    rank = {name: level for level, names in enumerate(RANKS) for name in names.split()}
    for package, imported in package_graph().items():
        above = {m for m in imported if rank[m] > rank[package]}
        assert not above, (package, above)


def test_no_package_cycles() -> None:
    """No two packages import each other, directly or not, not even a type under
    ``TYPE_CHECKING`` or in a function: the layers hold within a rank too."""
    assert cycles(package_graph()) == []


def test_package_cycles_are_seen() -> None:
    """A module-level import one way and a type-only one back make a package cycle."""
    graph = package_graph()
    graph["parse"] = graph["parse"] | {"extract"}
    assert ["extract", "parse"] in cycles(graph)


def test_engine_knows_sinks_by_their_protocols() -> None:
    """The engine imports no concrete sink and no crawl.db: the crawl package builds those."""
    engine = import_graph()["gossamer.engine"]
    sinks = {name for name in engine if name.startswith("gossamer.sinks.")}
    assert sinks == {"gossamer.sinks.base"}
    assert "gossamer.crawldb" not in engine
    assert "sqlite3" not in (ROOT / "engine.py").read_text()


def test_the_engine_hands_pages_to_the_page_stage() -> None:
    """The engine keeps the loop; what is done with a page (parsing, extraction, rules, the
    hook, content digests, focus) is the page stage's, and the engine imports none of it."""
    engine = import_graph()["gossamer.engine"]
    assert "gossamer.page" in engine
    page_work = ("gossamer.parse", "gossamer.extract", "gossamer.hooks", "gossamer.focus")
    assert not {m for m in engine if m.startswith(page_work)}, engine
    assert not {m for m in engine if m.startswith("gossamer.digests")}, engine
    source = (ROOT / "engine.py").read_text("utf-8")
    assert len(source.splitlines()) <= 450
    crawler = next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef) and node.name == "Crawler"
    )
    init = next(f for f in crawler.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    assert len(init.args.args) - 1 + len(init.args.kwonlyargs) <= 10


def test_single_process_modules_do_not_import_cluster_code() -> None:
    """``gossamer crawl`` wiring stands on its own: the cluster builds on it, not the reverse."""
    graph = import_graph()
    for module in ("gossamer.crawl", "gossamer.engine", "gossamer.settings", "gossamer.flags"):
        assert not {m for m in graph[module] if m.startswith("gossamer.cluster")}, module


UPPER = (
    "gossamer.engine",
    "gossamer.ledger",
    "gossamer.robots_fetch",
    "gossamer.crawl",
    "gossamer.cluster",
    "gossamer.cli",
    "gossamer.flags",
)
"""The layers above the stages (see the package docstring)."""
STAGES = (
    "parse",
    "extract",
    "fetch",
    "frontier",
    "sinks",
    "hooks",
    "digests",
    "focus",
    "page",
    "balance",
    "testweb",
)


def test_stages_never_import_the_layers_above_them() -> None:
    graph = import_graph()
    for module, imported in graph.items():
        if module.count(".") and module.split(".")[1] in STAGES:
            above = {
                m for m in imported if m in UPPER or m.startswith(tuple(u + "." for u in UPPER))
            }
            assert not above, (module, above)


def test_a_crawl_without_focus_settings_imports_no_focus_code() -> None:
    """Content digests are a stage of every crawl, not of the focused crawl: building and
    running a plain crawl loads nothing of ``gossamer.focus``."""
    code = (
        "import sys, gossamer.crawl, gossamer.engine, gossamer.cluster.worker; "
        "print(sorted(m for m in sys.modules if m.startswith('gossamer.focus')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_test_web_shares_no_code_with_the_crawler() -> None:
    for module, imported in import_graph().items():
        if module.startswith("gossamer.testweb"):
            assert all(m.startswith("gossamer.testweb") for m in imported), module


def test_every_package_says_what_it_holds_and_may_import() -> None:
    for module, path in module_files().items():
        if path.name == "__init__.py" and module.count(".") == 1:
            doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
            assert "may import" in doc, module


def stated_imports(package: str) -> set[str]:
    """The gossamer modules a stage package's docstring says it may import (each named as
    ``gossamer.x`` in the sentence that starts with "This package may import")."""
    path = ROOT / package.split(".")[1] / "__init__.py"
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
    sentence = doc[doc.index("may import") :].split(";")[0].split(".\n")[0]
    return set(re.findall(r"`+(gossamer(?:\.\w+)+)`+", sentence))


def within(module: str, allowed: str) -> bool:
    """``module`` is ``allowed``, inside it, or a package on the way to it (whose
    ``__init__`` importing ``allowed`` runs)."""
    return module == allowed or module.startswith(f"{allowed}.") or allowed.startswith(f"{module}.")


def test_stage_packages_import_only_what_their_docstring_states() -> None:
    graph = import_graph()
    stages = ("parse", "extract", "fetch", "frontier", "sinks", "digests", "focus", "discover")
    for stage in (*stages, "page"):
        package = f"gossamer.{stage}"
        allowed = stated_imports(package)
        for module, imported in graph.items():
            if within(module, package) and module != "gossamer":
                outside = {m for m in imported if not within(m, package)}
                stray = {m for m in outside if not any(within(m, a) for a in allowed)}
                assert not stray, (module, stray, allowed)


def test_stated_imports_reads_the_docstring() -> None:
    assert stated_imports("gossamer.parse") == {"gossamer.urls"}


def test_the_redis_frontier_stands_below_the_cluster() -> None:
    """``gossamer.frontier.redis`` holds one concern per module and imports no cluster code,
    no engine and nothing of the embedded frontier (see its package docstring)."""
    graph = import_graph()
    modules = [m for m in graph if m.startswith("gossamer.frontier.redis")]
    assert {m.rpartition(".")[2] for m in modules} >= {
        "keys", "scripts", "counts", "claims", "limiter", "fences", "frontier"
    }  # fmt: skip
    banned = ("gossamer.cluster", "gossamer.engine", "gossamer.crawl", "gossamer.frontier.local")
    for module in modules:
        assert not {m for m in graph[module] if m.startswith(banned)}, module
        assert len((module_files()[module]).read_text("utf-8").splitlines()) <= 400, module


def test_the_wiring_and_the_host_scheduler_stay_small() -> None:
    """The crawl's wiring is a package, one concern a module, and the host scheduler is the
    coordinator only: each of those modules at most 400 lines."""
    modules = module_files()
    wiring = [m for m in modules if m.startswith("gossamer.crawl.")]
    assert {m.rpartition(".")[2] for m in wiring} >= {"stages", "builders", "run"}
    for module in [*wiring, "gossamer.crawl"]:
        assert len(modules[module].read_text("utf-8").splitlines()) <= 400, module
    assert len(modules["gossamer.frontier.hosts"].read_text("utf-8").splitlines()) <= 400


def test_every_subpackage_says_what_it_holds_and_may_import() -> None:
    for module, path in module_files().items():
        if path.name == "__init__.py" and module.count(".") >= 2:
            doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
            assert "may import" in doc, module
