"""Rule documents: how they are read and compiled into a :class:`RuleSet`.

A document is TOML (``*.toml``) or JSON (``*.json``) of the same structure holding one or more
``[[rule]]`` tables; every key is described in ``docs/rules.md``. Reading a document checks
everything once: unknown keys, types, regexes, CSS selectors, XPath expressions, processors,
rule names unique across all the documents read together. Every problem is collected, each
naming its file, rule and field, and :class:`RuleError` carries the list; nothing about a
rule is checked again at page time.

Each ``[[rule]]`` table is checked and compiled in ``check`` (its schema and what its values
mean); the compiled types are in ``model``. The compiled :class:`RuleSet` keeps the documents'
text and a SHA-256 ``digest`` of them, so the set a crawl used can be named, shipped to other
processes and rebuilt with :func:`rules_from_documents`.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from gossamer.extract.rules.check import compile_rule
from gossamer.extract.rules.model import (
    Document,
    Field,
    LinkRule,
    Record,
    Rule,
    RuleError,
    RuleSet,
    Sample,
)
from gossamer.extract.rules.processors import RuleFunction
from gossamer.usercode import load_function

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_SELECT_PROGRAM",
    "Document",
    "Field",
    "LinkRule",
    "Record",
    "Rule",
    "RuleError",
    "RuleSet",
    "Sample",
    "document_paths",
    "load_functions",
    "load_rules",
    "read_documents",
    "rules_from_documents",
]

MAX_DOCUMENT_BYTES = 1 << 20
MAX_SELECT_PROGRAM = 2000
"""The most RE2 instructions the ``url`` and ``exclude`` patterns of all the rules read
together compile to: the crawl's loop matches a page's URL against them to choose its rule,
and in the worst case each costs the URL's length times its size (2 KB URLs then cost at
most about 50 ms; everyday rules take 10 to 120 each)."""


def document_paths(paths: Sequence[Path]) -> list[Path]:
    """The documents named: files as given, and the ``*.toml`` and ``*.json`` directly in a
    directory, sorted by name (sample files belong in a subdirectory)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.suffix in (".toml", ".json")))
        else:
            found.append(path)
    return found


def read_documents(paths: Sequence[Path]) -> list[Document]:
    """The documents of ``paths`` (see :func:`document_paths`); raises :class:`RuleError`
    for files that cannot be read."""
    documents = []
    problems = []
    for path in document_paths(paths):
        try:
            documents.append(_read(path))
        except ValueError as exc:
            problems.append(f"{path}: {exc}")
    if problems:
        raise RuleError(problems)
    if not documents:
        raise RuleError([f"{', '.join(map(str, paths))}: no rule documents (*.toml, *.json)"])
    return documents


def _read(path: Path) -> Document:
    if path.suffix not in (".toml", ".json"):
        raise ValueError("a rule document is a .toml or a .json file")
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror}") from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"larger than {MAX_DOCUMENT_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    return Document(str(path), text, path.parent)


def load_rules(paths: Sequence[Path], functions: Mapping[str, str] | None = None) -> RuleSet:
    """Read and compile the rule documents of ``paths``; ``functions`` (``name ->
    module:function``, the settings' ``rule_functions``) are those ``call`` may name. Raises
    :class:`RuleError` listing every problem."""
    return rules_from_documents(read_documents(paths), functions)


def rules_from_documents(
    documents: Sequence[Document], functions: Mapping[str, str] | None = None
) -> RuleSet:
    """Compile documents already read (from files, or shipped with a cluster job)."""
    loaded, problems = _load_functions(functions or {})
    rules: list[Rule] = []
    names: dict[str, str] = {}
    for document in documents:
        for rule in _document_rules(document, loaded, problems, start=len(rules)):
            if rule.name in names:
                problems.append(
                    f"{document.name}: rule {rule.name!r}: duplicate rule name "
                    f"(also in {names[rule.name]})"
                )
            names.setdefault(rule.name, document.name)
            rules.append(rule)
    _check_selection(rules, problems)
    if problems:
        raise RuleError(problems)
    specs = tuple(sorted((functions or {}).items()))
    return RuleSet(tuple(rules), tuple(documents), digest_of(documents), specs)


def _check_selection(rules: Sequence[Rule], problems: list[str]) -> None:
    """Refuse rules whose URL patterns together pass `MAX_SELECT_PROGRAM` (naming the rule
    that passes it)."""
    total = 0
    for rule in rules:
        total += sum(pattern.programsize for pattern in (rule.url, *rule.exclude))
        if total > MAX_SELECT_PROGRAM:
            problems.append(
                f"{rule.document}: rule {rule.name!r}: url: the url and exclude patterns of the "
                f"rules up to this one compile to {total} RE2 instructions, over "
                f"{MAX_SELECT_PROGRAM}: every URL the crawl fetches is matched against them "
                "(write them shorter or use fewer rules)"
            )
            return


def digest_of(documents: Sequence[Document]) -> str:
    """The digest of ``documents`` (:attr:`RuleSet.digest`): SHA-256 over their file names
    and texts, in order, so a set shipped elsewhere can be checked before it is compiled."""
    digest = hashlib.sha256()
    for document in documents:
        for part in (Path(document.name).name, document.text):
            data = part.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def load_functions(functions: Mapping[str, str]) -> dict[str, RuleFunction]:
    """Import the registered functions (``name -> module:function``) as ``--hook`` does;
    raises :class:`RuleError`."""
    loaded, problems = _load_functions(functions)
    if problems:
        raise RuleError(problems)
    return loaded


def _load_functions(functions: Mapping[str, str]) -> tuple[dict[str, RuleFunction], list[str]]:
    loaded: dict[str, RuleFunction] = {}
    problems = []
    for name, spec in functions.items():
        try:
            loaded[name] = cast(RuleFunction, load_function(spec))
        except ValueError as exc:
            problems.append(f"rule_functions: {name!r}: {exc}")
    return loaded, problems


def _parse(document: Document) -> Any:
    if document.name.endswith(".json"):
        return json.loads(document.text, parse_constant=_no_constant)
    return tomllib.loads(document.text)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def _document_rules(
    document: Document, functions: Mapping[str, RuleFunction], problems: list[str], start: int
) -> list[Rule]:
    """The compiled rules of one document; its problems are appended to ``problems``."""
    try:
        data = _parse(document)
    except (ValueError, RecursionError) as exc:
        kind = "JSON" if document.name.endswith(".json") else "TOML"
        problems.append(f"{document.name}: not valid {kind}: {exc}")
        return []
    stray = sorted(set(data) - {"rule"}) if isinstance(data, dict) else []
    if not isinstance(data, dict) or not isinstance(data.get("rule"), list) or not data["rule"]:
        problems.append(f"{document.name}: no rules: a document holds one or more [[rule]]")
        return []
    if stray:
        problems.append(f"{document.name}: unknown key {stray[0]!r} (only [[rule]] tables)")
    rules: list[Rule] = []
    for index, raw in enumerate(data["rule"]):
        rule = compile_rule(raw, document, index, problems, functions, start + len(rules))
        if rule is not None:
            rules.append(rule)
    return rules
