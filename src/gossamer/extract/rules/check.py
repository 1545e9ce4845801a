"""The checks of one ``[[rule]]`` table of a rule document, and its compiling into a
:class:`~gossamer.extract.rules.model.Rule`: the table's keys and types (a pydantic schema,
strict), then what they mean (patterns, CSS selectors, XPath expressions, sources,
processors). Every problem is reported, each naming its file, rule and field."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from selectolax.lexbor import LexborHTMLParser

from gossamer.extract.rules.model import Document, Field, LinkRule, Record, Rule, Sample
from gossamer.extract.rules.patterns import (
    Pattern,
    compile_pattern,
    compile_url_pattern,
    show,
)
from gossamer.extract.rules.processors import RuleFunction, compile_processors
from gossamer.extract.rules.sources import (
    CssSource,
    JsonLdSource,
    MetaSource,
    RegexSource,
    Source,
    XPathSource,
)

__all__ = ["SOURCES", "compile_rule"]

SOURCES = ("css", "xpath", "regex", "jsonld", "meta")

_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_ATTRIBUTE = re.compile(r"[^\s\"'>/=\x00-\x1f]{1,100}")

# The documents' schema: types and keys (pydantic, strict); what they mean is checked below.
_SCHEMA = ConfigDict(extra="forbid", strict=True, frozen=True)


class _FieldSpec(BaseModel):
    model_config = _SCHEMA
    name: str
    css: str | None = None
    xpath: str | None = None
    regex: str | None = None
    jsonld: str | None = None
    meta: str | None = None
    attr: str | None = None
    multiple: bool = False
    required: bool = False
    process: list[Any] = []


class _RecordSpec(BaseModel):
    model_config = _SCHEMA
    css: str | None = None
    xpath: str | None = None


class _LinkSpec(BaseModel):
    model_config = _SCHEMA
    css: str | None = None
    allow: list[str] = []
    deny: list[str] = []


class _SampleSpec(BaseModel):
    model_config = _SCHEMA
    html: str
    url: str
    expect: str


class _RuleSpec(BaseModel):
    model_config = _SCHEMA
    name: str
    url: str
    exclude: list[str] = []
    priority: int = 0
    record: _RecordSpec | None = None
    field: list[_FieldSpec] = []
    link: list[_LinkSpec] = []
    sample: list[_SampleSpec] = []


def compile_rule(
    raw: Any,
    document: Document,
    index: int,
    problems: list[str],
    functions: Mapping[str, RuleFunction],
    order: int,
) -> Rule | None:
    """The compiled rule of ``raw``, the ``index``-th table of ``document``, the ``order``-th
    of the set; None when it has problems, each appended to ``problems``."""
    where = _Where(document, _rule_label(raw, index), problems)
    return _compile_rule(raw, where, functions, order)


def _rule_label(raw: Any, index: int) -> str:
    name = raw.get("name") if isinstance(raw, dict) else None
    return f"rule {name!r}" if isinstance(name, str) and name else f"rule #{index + 1}"


@dataclass(frozen=True, slots=True)
class _Where:
    """Where problems are found: a document's rule, and how to report them."""

    document: Document
    rule: str
    problems: list[str]

    def add(self, message: str, part: str | None = None) -> None:
        place = f"{self.document.name}: {self.rule}"
        self.problems.append(f"{place}: {part}: {message}" if part else f"{place}: {message}")


def _compile_rule(
    raw: Any, where: _Where, functions: Mapping[str, RuleFunction], order: int
) -> Rule | None:
    if not isinstance(raw, dict):
        where.add("must be a table")
        return None
    try:
        spec = _RuleSpec.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors():
            part, message = _describe(error, raw)
            where.add(message, part)
        salvaged = _valid_parts(raw)
        if salvaged is not None:
            _build(salvaged, where, functions, order)  # the other parts' problems too
        return None
    return _build(spec, where, functions, order)


def _valid_parts(raw: dict[str, Any]) -> _RuleSpec | None:
    """The rule without the parts its schema refused (None if even that fails), so the
    problems of the rest are listed with those of the schema."""
    parts = {key: value for key, value in raw.items() if key in _RuleSpec.model_fields}
    models: dict[str, type[BaseModel]] = {
        "field": _FieldSpec,
        "link": _LinkSpec,
        "sample": _SampleSpec,
    }
    for kind, model in models.items():
        if isinstance(parts.get(kind), list):
            parts[kind] = [item for item in parts[kind] if _conforms(model, item)]
    for key in ("name", "url"):
        if not isinstance(parts.get(key), str):
            parts[key] = "_" if key == "name" else ""
    for key in ("exclude", "priority", "record", "field", "link", "sample"):
        if key in parts and not _conforms(_RuleSpec, {"name": "_", "url": "", key: parts[key]}):
            del parts[key]
    try:
        return _RuleSpec.model_validate(parts)
    except ValidationError:
        return None


def _conforms(model: type[BaseModel], value: Any) -> bool:
    try:
        model.model_validate(value)
    except ValidationError:
        return False
    return True


def _build(
    spec: _RuleSpec, where: _Where, functions: Mapping[str, RuleFunction], order: int
) -> Rule | None:
    """The compiled rule of a ``spec`` its schema accepted; None when it has problems."""
    before = len(where.problems)
    rule = Rule(
        name=spec.name,
        url=_url_pattern(spec.url, where, "url"),
        document=where.document.name,
        order=order,
        exclude=tuple(_url_pattern(p, where, "exclude") for p in spec.exclude),
        priority=spec.priority,
        record=_record(spec.record, where),
        fields=_fields(spec, where, functions),
        links=tuple(_link(link, i, where) for i, link in enumerate(spec.link)) or None,
        samples=tuple(_sample(sample, where) for sample in spec.sample),
    )
    if not spec.name.strip() or not spec.name.isprintable():
        where.add("the name must be printable text, not blank")
    return rule if len(where.problems) == before else None


_TYPES = {
    "string_type": "must be text",
    "bool_type": "must be true or false",
    "int_type": "must be an integer",
    "list_type": "must be a list",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "dict_type": "must be a table",
}


def _describe(error: Any, raw: dict[str, Any]) -> tuple[str | None, str]:
    """(the part of the rule, the message) of a pydantic error."""
    loc = list(error["loc"])
    parts: list[str] = []
    node: Any = raw
    while len(loc) >= 2 and loc[0] in ("field", "link", "sample") and isinstance(loc[1], int):
        kind, index = loc[0], loc[1]
        items = node.get(kind) if isinstance(node, dict) else None
        item = items[index] if isinstance(items, list) and index < len(items) else None
        name = item.get("name") if isinstance(item, dict) else None
        named = kind == "field" and isinstance(name, str) and name
        parts.append(f"field {name!r}" if named else f"{kind} #{index + 1}")
        node, loc = item, loc[2:]
    if loc and loc[0] == "record":
        parts.append("record")
        loc = loc[1:]
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    kind = error["type"]
    if kind == "extra_forbidden":
        message = f"unknown key {key!r}"
    elif kind == "missing":
        message = f"missing key {key!r}"
    elif kind in _TYPES:
        message = f"{key!r} {_TYPES[kind]}" if key else _TYPES[kind]
    else:
        message = f"{key!r}: {error['msg']}" if key else str(error["msg"])
    return (": ".join(parts) or None), message


_NEVER = compile_pattern("a^")
"""What a refused pattern compiles to (its rule is dropped: never matched)."""


def _url_pattern(text: str, where: _Where, part: str) -> Pattern:
    try:
        return compile_url_pattern(text)
    except ValueError as exc:
        where.add(str(exc), part)
        return _NEVER


_PROBE = LexborHTMLParser("<p></p>")


def _check_css(selector: str) -> str | None:
    """Why lexbor refuses ``selector``, or None."""
    if not selector.strip():
        return "the CSS selector is empty"
    try:
        _PROBE.css(selector)
    except Exception:
        return f"bad CSS selector {show(selector)}"
    return None


def _check_xpath(expression: str) -> str | None:
    from lxml import etree

    try:
        etree.XPath(expression)
    except etree.XPathSyntaxError as exc:
        return f"bad XPath {show(expression)}: {str(exc)[:200]}"
    return None


def _record(spec: _RecordSpec | None, where: _Where) -> Record | None:
    if spec is None:
        return None
    if (spec.css is None) == (spec.xpath is None):
        where.add("give exactly one of css, xpath", "record")
    problem = _check_css(spec.css) if spec.css is not None else None
    if spec.xpath is not None:
        problem = _check_xpath(spec.xpath)
    if problem:
        where.add(problem, "record")
    return Record(spec.css, spec.xpath)


def _fields(
    spec: _RuleSpec, where: _Where, functions: Mapping[str, RuleFunction]
) -> tuple[Field, ...]:
    fields = []
    seen: set[str] = set()
    for index, field_spec in enumerate(spec.field):
        part = f"field {field_spec.name!r}" if field_spec.name else f"field #{index + 1}"
        if not _FIELD_NAME.fullmatch(field_spec.name):
            where.add("a name is a letter or _, then letters, digits, _ or - (64 at most)", part)
        elif field_spec.name in seen:
            where.add("duplicate field name", part)
        seen.add(field_spec.name)
        compiled = _field(field_spec, spec.record, functions, lambda m, p=part: where.add(m, p))
        if compiled is not None:
            fields.append(compiled)
    return tuple(fields)


def _field(
    spec: _FieldSpec,
    record: _RecordSpec | None,
    functions: Mapping[str, RuleFunction],
    report: Any,
) -> Field | None:
    given = [name for name in SOURCES if getattr(spec, name) is not None]
    if not given:
        report(f"no source: give one of {', '.join(SOURCES)}")
        return None
    if len(given) > 1:
        report(f"two sources ({', '.join(given)}): give exactly one")
        return None
    kind = given[0]
    attr = spec.attr if spec.attr is not None else "text"
    if spec.attr is not None and kind not in ("css", "xpath"):
        report(f"attr applies to css and xpath fields, not {kind}")
    elif not _ATTRIBUTE.fullmatch(attr):
        report(f"attr {show(attr)} is not text, html or an attribute name")
    try:
        source = _source(kind, getattr(spec, kind), attr, record)
        process = compile_processors(spec.process, functions)
    except ValueError as exc:
        report(str(exc))
        return None
    return Field(spec.name, source, spec.multiple, spec.required, process)


def _source(kind: str, value: str, attr: str, record: _RecordSpec | None) -> Source:
    """The compiled source; raises ``ValueError``."""
    if kind == "css":
        _raise(_check_css(value))
        return CssSource(value, attr)
    if kind == "xpath":
        if record is not None and value.lstrip().startswith("/"):
            raise ValueError(
                f"xpath {show(value)} inside a record must be relative to it ('.//h2', not '//h2')"
            )
        _raise(_check_xpath(value))
        return XPathSource(value, attr)
    if kind == "regex":
        return RegexSource(compile_pattern(value))
    if kind == "jsonld":
        type_name, *keys = value.split(".")
        if not all(part.strip() for part in [type_name, *keys]):
            raise ValueError(f"jsonld path {show(value)} is not Type.key.key (or *.key)")
        return JsonLdSource(type_name, tuple(keys))
    if not value.strip():
        raise ValueError("the meta name is empty")
    return MetaSource(value.strip().lower())


def _raise(problem: str | None) -> None:
    if problem is not None:
        raise ValueError(problem)


def _link(spec: _LinkSpec, index: int, where: _Where) -> LinkRule:
    part = f"link #{index + 1}"
    problem = _check_css(spec.css) if spec.css is not None else None
    if problem:
        where.add(problem, part)
    return LinkRule(
        spec.css,
        tuple(_url_pattern(p, where, f"{part}: allow") for p in spec.allow),
        tuple(_url_pattern(p, where, f"{part}: deny") for p in spec.deny),
    )


def _sample(spec: _SampleSpec, where: _Where) -> Sample:
    base = where.document.directory or Path()
    sample = Sample(base / spec.html, spec.url, base / spec.expect)
    if where.document.directory is not None and not sample.html.is_file():
        where.add(f"no file {spec.html} (relative to the rule file)", "sample")
    return sample
