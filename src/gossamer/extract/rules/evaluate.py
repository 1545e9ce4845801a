"""Evaluating rules on a page: the one code path of ``gossamer rules try``, ``rules test`` and
the crawl.

:func:`evaluate` picks the page's rule (:meth:`RuleSet.select`) and reads it on the page the
crawler parsed already (:class:`gossamer.parse.links.ParsedPage`): its items, the links to
follow and what went wrong. Nothing raises out of it for anything a page holds: a selector
that fails on the page, a processor that cannot convert a value, a required field missing
become short strings in :attr:`PageItems.errors` (at most `MAX_ERRORS`, the last one saying
how many more there were); a failure no check foresaw is its field's error too (the value
null), never the other fields'.

Items: without a ``record``, one item per page; with one, an item per container element, its
CSS and XPath fields read inside that element only (its regex fields read the element's HTML;
jsonld and meta fields read the page), so a field missing from one container is null in that
item, never taken from the next. An item is its fields by name, in document order (what
items.jsonl holds as ``fields``; the rule's name is :attr:`PageItems.rule`). An item whose
required field is null, ``""`` or ``[]`` is dropped (counted in :attr:`PageItems.dropped`).
At most `MAX_ITEMS` items per page, holding at most `MAX_PAGE_CHARS` characters of text
together (the items past it dropped, as the errors say); each value at most
`processors.MAX_FIELD_CHARS` characters and `processors.MAX_LIST_ITEMS` items (a processor
over them is the field's error, its value null).

Links: a rule without link rules leaves the page's own links (``links`` is None); with link
rules, only the links they select are followed: for each, the page's links inside its CSS
region (default: all of them), kept when no ``deny`` pattern matches and, if it has ``allow``
patterns, one of those does. Only links the page's parse would follow are eligible (absolute
http(s), not ``nofollow``), in document order, each once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gossamer.extract.rules.processors import ProcessorError, value_chars
from gossamer.extract.rules.schema import Field, LinkRule, Rule, RuleSet
from gossamer.extract.rules.sources import MAX_VALUE_CHARS, PageView, SourceError
from gossamer.parse.links import ParsedPage, parse_html
from gossamer.urls import Resolver

__all__ = [
    "MAX_ERRORS",
    "MAX_ITEMS",
    "MAX_PAGE_CHARS",
    "MAX_VALUE_CHARS",
    "PageItems",
    "evaluate",
    "evaluate_body",
    "evaluate_rule",
]

MAX_ITEMS = 10_000
MAX_ERRORS = 50
MAX_PAGE_CHARS = 16 << 20
"""The most characters of text a page's items hold together; items past it are dropped."""
_MAX_ERROR_CHARS = 300
_LINK_TAGS = frozenset({"a", "area"})


@dataclass(frozen=True, slots=True)
class PageItems:
    """What one rule read from one page."""

    rule: str
    """The rule's name."""
    items: list[dict[str, Any]]
    """Each item's fields by name (what items.jsonl holds as ``fields``)."""
    links: list[str] | None
    """The links to follow; None: the rule has no link rules, follow the page's own."""
    errors: list[str]
    dropped: int = 0
    """Items left out because a required field was missing."""

    def as_json(self, url: str) -> dict[str, Any]:
        """The JSON ``rules try`` prints and ``rules test`` compares."""
        return {
            "url": url,
            "rule": self.rule,
            "items": self.items,
            "links": self.links,
            "errors": self.errors,
        }


def evaluate(rules: RuleSet, url: str, page: ParsedPage, body: bytes) -> PageItems | None:
    """The items and links of the rule for ``url``, read on ``page`` (parsed from ``body``);
    None when no rule is for ``url``."""
    rule = rules.select(url)
    return None if rule is None else evaluate_rule(rule, url, page, body)


def evaluate_body(
    rules: RuleSet,
    url: str,
    body: bytes,
    *,
    charset: str | None = None,
    follow_nofollow: bool = False,
) -> tuple[ParsedPage, PageItems | None]:
    """Parse ``body`` as the crawl does, then :func:`evaluate` it."""
    page = parse_html(body, url, header_charset=charset, follow_nofollow=follow_nofollow)
    return page, evaluate(rules, url, page, body)


def evaluate_rule(rule: Rule, url: str, page: ParsedPage, body: bytes) -> PageItems:
    """The items and links ``rule`` reads on ``page``."""
    if page.tree is None:
        return PageItems(rule.name, [], None, ["the page could not be parsed as HTML"])
    view = PageView(url, page.base_url, page.tree, body, page.text_encoding)
    errors = _Errors()
    items, dropped = _items(rule, view, errors)
    links = None if rule.links is None else _links(rule.links, view, page)
    for note in view.notes:
        errors.add(note)
    return PageItems(rule.name, items, links, errors.listed(), dropped)


class _Errors:
    """A page's errors: the first `MAX_ERRORS` kept, the rest counted."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.more = 0

    def add(self, message: str) -> None:
        if len(self.kept) < MAX_ERRORS:
            self.kept.append(message[:_MAX_ERROR_CHARS])
        else:
            self.more += 1

    def listed(self) -> list[str]:
        return self.kept + ([f"... and {self.more} more errors"] if self.more else [])


def _containers(rule: Rule, view: PageView, errors: _Errors) -> list[Any]:
    """The scopes items are read in: the page (None), or each record container."""
    record = rule.record
    if record is None:
        return [None]
    if record.css is not None:
        found: list[Any] = view.tree.css(record.css)
    else:
        root = view.lxml_root
        try:
            result = root.xpath(record.xpath) if root is not None else []
        except Exception as exc:  # lxml's XPathError, imported only with lxml
            errors.add(f"record: xpath: {exc}")
            return []
        result = result if isinstance(result, list) else []
        found = [node for node in result if hasattr(node, "tag")]
    if len(found) > MAX_ITEMS:
        errors.add(f"record: {len(found)} containers, the first {MAX_ITEMS} read")
    return found[:MAX_ITEMS]


def _items(rule: Rule, view: PageView, errors: _Errors) -> tuple[list[dict[str, Any]], int]:
    if not rule.fields:
        return [], 0
    items = []
    dropped = 0
    chars = 0
    containers = _containers(rule, view, errors)
    for number, scope in enumerate(containers, 1):
        where = f"item {number}: " if rule.record is not None else ""
        item: dict[str, Any] = {}
        missing = []
        for field in rule.fields:
            value = _value(field, view, scope, errors)
            item[field.name] = value
            chars += value_chars(value, MAX_PAGE_CHARS)
            if field.required and (value is None or value == "" or value == []):
                missing.append(field.name)
        if chars > MAX_PAGE_CHARS:
            dropped += len(containers) - number + 1
            errors.add(f"{where}the items passed {MAX_PAGE_CHARS} characters: the rest dropped")
            break
        if missing:
            dropped += 1
            errors.add(f"{where}required field {missing[0]!r} missing: item dropped")
            continue
        items.append(item)
    return items, dropped


def _value(field: Field, view: PageView, scope: Any, errors: _Errors) -> Any:
    """The field's value; what fails on the page is the field's error (its value null, or
    ``[]``), never the other fields'."""
    try:
        found = field.source.values(view, scope, not field.multiple)
    except SourceError as exc:
        errors.add(f"field {field.name!r}: {exc}")
        return [] if field.multiple else None
    except MemoryError:
        raise
    except Exception as exc:  # a failure no check of the rule foresaw: this field's only
        errors.add(f"field {field.name!r}: internal error: {type(exc).__name__}: {exc}")
        return [] if field.multiple else None
    found = [_bounded(value, field, errors) for value in found]
    value: Any = found if field.multiple else (found[0] if found else None)
    for processor in field.process:
        try:
            value = processor(value, view.base_url)
        except ProcessorError as exc:
            errors.add(f"field {field.name!r}: {exc}")
            return None
        except MemoryError:
            raise
        except Exception as exc:  # as above
            errors.add(f"field {field.name!r}: {processor.name}: internal error: {exc!r}")
            return None
    return value


def _bounded(value: Any, field: Field, errors: _Errors) -> Any:
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        errors.add(f"field {field.name!r}: a value cut to {MAX_VALUE_CHARS} characters")
        return value[:MAX_VALUE_CHARS]
    return value


def _links(rules: tuple[LinkRule, ...], view: PageView, page: ParsedPage) -> list[str]:
    followable = set(page.links)
    chosen: dict[str, None] = {}
    resolver: Resolver | None = None
    for link_rule in rules:
        if link_rule.css is None:
            candidates = page.links
        else:
            resolver = resolver or Resolver(page.base_url)
            candidates = _region_links(view, link_rule.css, resolver)
        for url in candidates:
            if url in followable and url not in chosen and link_rule.accepts(url):
                chosen[url] = None
    return list(chosen)


def _region_links(view: PageView, css: str, resolver: Resolver) -> list[str]:
    """The absolute URLs of the links inside (or matched by) the region's elements."""
    found = []
    for region in view.tree.css(css):
        if region.tag in _LINK_TAGS and "href" in region.attributes:
            nodes = [region]
        else:
            nodes = region.css("a[href], area[href]")
        for node in nodes:
            resolved = resolver.resolve(node.attributes.get("href") or "")
            if resolved is not None:
                found.append(resolved)
    return found
