"""The rule documents of ``gossamer ui --rules-dir DIR``: listed, opened, and saved with
their samples.

The browser names a file (``shop.toml``: letters, digits, ``_``, ``-``, ``.``; ``.toml``);
the server builds the path inside DIR and nothing else. Saving a rule replaces the rule of
that name in the document (or adds it), keeping the document's other rules; its samples are
written as ``samples/<document>-<rule>-<n>.html`` with the JSON ``gossamer rules test``
expects beside them (what the rule gives now: saving says the rule is right). The new text
is checked with every other document of DIR (``gossamer crawl --rules DIR`` reads them
together) before it replaces the file; the old text stays when it does not pass.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gossamer.extract.rules import Document, RuleError, RuleSet, rules_from_documents
from gossamer.extract.rules.schema import MAX_DOCUMENT_BYTES, read_documents
from gossamer.rules_cli import sample_output
from gossamer.ui.files import FileError, open_file

__all__ = ["MAX_SAMPLES", "MAX_SAMPLE_BYTES", "DocumentError", "Rules", "SamplePage", "to_toml"]

MAX_SAMPLES = 5
"""Samples saved with a rule."""
MAX_SAMPLE_BYTES = 50 << 20
"""Bytes of a sample page read when a document is opened (the first ones: a longer file is
cut there)."""
_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}\.toml")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")
_TABLES = ("record",)
_ARRAYS = ("field", "link", "sample")


class DocumentError(ValueError):
    """A save or an open that cannot be done; ``problems`` one line each."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True, slots=True)
class SamplePage:
    """A page saved with a rule: its URL and body."""

    url: str
    body: bytes


@dataclass(frozen=True, slots=True)
class Rules:
    """The folder of rule documents."""

    directory: Path

    def path(self, name: str) -> Path:
        """The document ``name`` inside the folder; DocumentError for any other name."""
        if not isinstance(name, str) or not _FILE.fullmatch(name) or ".." in name:
            raise DocumentError(
                ["a document name is letters, digits, _, - and . ending in .toml (no folders)"]
            )
        path = self.directory / name
        if path.resolve().parent != self.directory.resolve():
            raise DocumentError(["a document is saved in the rules folder only"])
        return path

    def names(self) -> list[str]:
        """The ``*.toml`` documents of the folder."""
        try:
            return sorted(p.name for p in self.directory.glob("*.toml") if _FILE.fullmatch(p.name))
        except OSError:
            return []

    def open(self, name: str) -> tuple[list[dict[str, Any]], dict[str, list[SamplePage]]]:
        """The rules of document ``name`` (as the TOML holds them) and each rule's samples."""
        path = self.path(name)
        raw = _read_raw(path)
        rules = raw.get("rule", [])
        samples: dict[str, list[SamplePage]] = {}
        for rule in rules:
            pages = []
            for sample in rule.get("sample", [])[:MAX_SAMPLES]:
                html = self._inside(sample.get("html"))
                if html is not None and isinstance(sample.get("url"), str):
                    body = _read_sample(html)
                    if body is not None:
                        pages.append(SamplePage(sample["url"], body))
            samples[str(rule.get("name"))] = pages
        return rules, samples

    def _inside(self, relative: object) -> Path | None:
        if not isinstance(relative, str):
            return None
        path = (self.directory / relative).resolve()
        return path if path.is_relative_to(self.directory.resolve()) else None

    def save(
        self,
        name: str,
        rule: Mapping[str, Any],
        samples: Sequence[SamplePage],
        replaces: str | None = None,
        functions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Save ``rule`` (replacing the rule named ``replaces``, default its own name) with
        ``samples`` into document ``name``; what was written."""
        path = self.path(name)
        raw = _read_raw(path) if path.exists() else {"rule": []}
        rule = dict(rule)
        if not isinstance(rule.get("name"), str) or not rule["name"]:
            raise DocumentError(["the rule needs a name"])
        slug = f"{path.stem}-{_slug(rule['name'])}"
        rule["sample"] = [
            {
                "html": f"samples/{slug}-{n}.html",
                "url": page.url,
                "expect": f"samples/{slug}-{n}.json",
            }
            for n, page in enumerate(samples[:MAX_SAMPLES], 1)
        ]
        old = replaces or rule["name"]
        rules = [r for r in raw.get("rule", []) if r.get("name") not in (old, rule["name"])]
        place = next(
            (i for i, r in enumerate(raw.get("rule", [])) if r.get("name") in (old, rule["name"])),
            len(rules),
        )
        rules.insert(min(place, len(rules)), rule)
        text = to_toml(rules, header=f"# Rules saved by the gossamer rule editor ({name}).\n")
        if len(text.encode()) > MAX_DOCUMENT_BYTES:
            raise DocumentError([f"the document would be larger than {MAX_DOCUMENT_BYTES} bytes"])
        compiled = self._check(path, text, functions)
        outputs = [sample_output(compiled, page.url, page.body) for page in samples]
        strays = [
            f"sample {page.url} is read by "
            + ("no rule" if output["rule"] is None else f"rule {output['rule']!r}")
            + f", not by {rule['name']!r}: check the URL pattern, or drop the sample"
            for page, output in zip(samples, outputs, strict=False)
            if output["rule"] != rule["name"]
        ]
        if strays:
            raise DocumentError(strays)
        (self.directory / "samples").mkdir(parents=True, exist_ok=True)
        for entry, page, output in zip(rule["sample"], samples, outputs, strict=False):
            (self.directory / entry["html"]).write_bytes(page.body)
            (self.directory / entry["expect"]).write_text(
                json.dumps(output, ensure_ascii=False, indent=2) + "\n", "utf-8"
            )
        temporary = path.with_name(f".{path.name}.saving")
        temporary.write_text(text, "utf-8")
        os.replace(temporary, path)
        return {"document": name, "text": text, "samples": len(outputs)}

    def _check(self, path: Path, text: str, functions: Mapping[str, str] | None) -> RuleSet:
        """The new document compiled with the folder's others (as ``rules test DIR`` and
        ``crawl --rules DIR`` read them); DocumentError if not (its samples are written once
        it passes: they are not looked for here)."""
        document = Document(str(path), text)
        others = []
        try:
            others = [d for d in read_documents([self.directory]) if Path(d.name) != path]
        except RuleError:
            others = []
        try:
            return rules_from_documents([*others, document], functions)
        except RuleError as exc:
            raise DocumentError(exc.problems) from None


def _slug(name: str) -> str:
    """A rule's name as a file name's part, one per name: letters, digits, ``_`` and ``-``,
    and a digest of the name when it had to change (``a b`` and ``a_b`` differ)."""
    safe = _SLUG.sub("_", name)[:60]
    if safe == name:
        return safe
    return f"{safe}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def _read_sample(path: Path) -> bytes | None:
    """The first :data:`MAX_SAMPLE_BYTES` of the sample page ``path``; None when it is
    missing, unreadable or not a regular file (a FIFO is not waited on, a device not read)."""
    try:
        handle = open_file(path)
        if handle is None:
            return None
        with handle:
            return handle.read(MAX_SAMPLE_BYTES)
    except (OSError, FileError):
        return None


def _read_raw(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text("utf-8")
        raw = tomllib.loads(text)
    except FileNotFoundError:
        raise DocumentError([f"no document {path.name}"]) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DocumentError([f"{path.name}: cannot read: {exc}"]) from None
    rules = raw.get("rule")
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise DocumentError([f"{path.name}: not a rule document"])
    return raw


def to_toml(rules: Sequence[Mapping[str, Any]], header: str = "") -> str:
    """The TOML of a rule document holding ``rules`` (each as its ``[[rule]]`` table holds
    it); DocumentError for a value TOML cannot hold."""
    lines = [header] if header else []
    for rule in rules:
        lines.append("[[rule]]")
        for key, value in rule.items():
            if key not in _TABLES and key not in _ARRAYS:
                lines.append(f"{_key(key)} = {_value(value)}")
        for key in _TABLES:
            if isinstance(rule.get(key), Mapping):
                lines += ["", f"[rule.{key}]"]
                lines += [f"{_key(k)} = {_value(v)}" for k, v in rule[key].items()]
        for key in _ARRAYS:
            for table in rule.get(key) or []:
                if not isinstance(table, Mapping):
                    raise DocumentError([f"rule.{key}: each entry is a table"])
                lines += ["", f"[[rule.{key}]]"]
                lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
        lines += ["", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise DocumentError(["a key is a string"])
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DocumentError(["a number must be finite"])
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise DocumentError([f"a value of type {type(value).__name__} cannot be saved"])


def _string(text: str) -> str:
    if "'" not in text and text.isprintable():
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
