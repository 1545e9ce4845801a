"""docs/reference/records.md, written from the record's fields (see reference_pages.py).

Each field of :class:`gossamer.sinks.base.PageRecord` and :class:`gossamer.sinks.base.Item` is a
row: its name, its type and what it holds, the docstring under the field in
``src/gossamer/sinks/base.py`` or, for the fields that have none, :data:`PLAIN`. A field with
neither stops the page (:func:`render` raises), so a new field cannot go undocumented.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import operator
import typing
from collections.abc import Iterator

from gossamer.sinks import base

PLAIN = {
    "url": "The URL as fetched (canonical form).",
    "status": "The HTTP status of the answer; null when no answer came (an error, robots.txt).",
    "depth": "Links from the nearest seed (a seed is 0; a sitemap's entries are 1).",
    "content_type": "The answer's media type, without parameters.",
    "bytes": "Body bytes received (after content decoding; a rendered page: its DOM's size).",
    "elapsed_ms": "Milliseconds from the request's start to the end of its answer.",
    "title": "The page's `<title>`.",
    "outlinks": "Links found on the page (or entries in scope, for a sitemap).",
    "redirect_to": "Where a 3xx answer pointed (absolute), queued as a URL of its own.",
    "error": "Null, or a short reason: `robots`, `timeout`, `retries-exhausted`, "
    "`blocked-address`, `budget`, `proxy-error`, `hook-error: ...`, `pdf-timeout`...",
    "attempts": "Requests made for the URL (retries included).",
    "truncated": "The body was cut at `--max-body-bytes`, a timeout or a reset. A body the "
    "connection cut short (`incomplete-body`, `connection-reset`) is kept only once the retries "
    "are spent.",
    "description": "The page's meta description (or `og:description`).",
    "authors": "The authors the page names (meta tags, JSON-LD).",
    "Item.url": "The URL of the page the item was read from.",
    "Item.rule": "The name of the rule that read it.",
    "Item.index": "The item's place among the page's items (0 first).",
    "Item.fetched_at": "When its page was fetched, unix seconds.",
}

HEADER = """\
# Records and outputs

<!-- Written by scripts/reference_pages.py from src/gossamer/sinks/base.py: do not edit by hand.
     `make docs` writes it again; tests/test_docs_reference.py fails while it is not current. -->

A crawl writes into `--out` (default `./crawl-out`):

- `pages.jsonl`: one JSON object per finished URL, the record below;
- `crawl.db`: the same records in SQLite (table `pages`), the frontier's state (`urls`), rule
  items (`items`), revisits, sitemap entries and the cookie jar;
- `stats.json`: the crawl's figures when it ends: pages, ok, per-status counts, errors,
  robots-blocked, duplicates skipped, `duplicates_exact`, `duplicates_near`, retries, elapsed
  seconds, pages/s, peak RSS, `internal_errors`, `hook_errors`, and a section per capability
  in use (`proxies`, `render`, `focus`, `auth`, `sitemaps`, `revisits`);
- `items.jsonl`: with `--rules`, one item per line (the fields below);
- `warc/`: with `--warc`, gzip-compressed WARC/1.1 files (see
  [Content and WARC](../guides/content.md#warc-files-warc));
- `status.json`: live counters and held-back hosts, rewritten atomically every 2 s (the UI
  reads it);
- `crawl.log`: the crawl's log at `info` and above, JSON lines, rotated at 2 MiB
  ([Logs](logs.md)).

With `--store postgres://...` the records also go to a PostgreSQL table (fields as columns,
`extra` and rule items as `jsonb`). Every JSON-lines file of a crawl writes U+2028, U+2029 and
U+0085 as JSON escapes (`\\u2028`), so a reader that splits lines on them (`str.splitlines`)
still gets one object a line. An existing crawl in `--out` is continued with `--resume` or
discarded with `--overwrite`.

## A page record

Every URL ends as exactly one record (a sitemap or feed read for its URLs is a record too, of
`kind` `sitemap`). Absent values are null or empty lists.
"""

ITEMS = """
## An item

With `--rules`, each item a rule reads is a line of `items.jsonl`, a row of crawl.db's `items`
table and, with `--store`, of the PostgreSQL table `items`. See
[Rules, hooks and the rule editor](../guides/rules.md).
"""


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass in its source, by field name."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    found: dict[str, str] = {}
    for here, after in itertools.pairwise(body):
        if (
            isinstance(here, ast.AnnAssign)
            and isinstance(here.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            found[here.target.id] = " ".join(after.value.value.split())
    return found


def _rows(cls: type) -> Iterator[str]:
    documented = field_docs(cls)
    hints = typing.get_type_hints(cls)
    for name in _stored_fields(cls):
        text = PLAIN.get(f"{cls.__name__}.{name}") or documented.get(name) or PLAIN.get(name)
        if text is None:
            raise LookupError(f"{cls.__name__}.{name} has no description")
        text = text.replace("``", "`").replace("|", "\\|").replace("\n", " ")
        yield f"| `{name}` | {json_type(hints[name])} | {_plain(text)} |"


def _stored_fields(cls: type) -> list[str]:
    """The names of the fields a record stores: a msgspec Struct's (``PageRecord``), or a
    dataclass's whose metadata does not say ``stored=False``; never ``found``."""
    struct_fields: tuple[str, ...] | None = getattr(cls, "__struct_fields__", None)
    if struct_fields is not None:
        names = list(struct_fields)
    else:
        names = [f.name for f in dataclasses.fields(cls) if f.metadata.get("stored") is not False]
    return [name for name in names if name != "found"]


def json_type(kind: object) -> str:
    """A field's type as it reads in JSON: ``string``, ``integer or null``, ``list of strings``."""
    args = typing.get_args(kind)
    if type(None) in args:
        rest = [arg for arg in args if arg is not type(None)]
        return (
            json_type(rest[0] if len(rest) == 1 else functools.reduce(operator.or_, rest))
            + " or null"
        )
    origin = typing.get_origin(kind)
    if origin is tuple or origin is list:
        return "list of " + json_type(args[0]) + "s"
    if origin is dict or kind is dict:
        return "object"
    names: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(kind, str(kind))


def _plain(text: str) -> str:
    """Sphinx roles (``:mod:`x```) as code, for Markdown."""
    while ":`" in text:
        start = text.rfind(":", 0, text.index(":`"))
        text = text[:start] + text[text.index(":`") + 1 :]
    return text


def render() -> str:
    """The records page, as it must read for the record of this tree."""
    head = "| Field | Type | What it holds |\n|---|---|---|"
    page = [HEADER, head, *_rows(base.PageRecord), ITEMS, head, *_rows(base.Item)]
    return "\n".join(page) + "\n"
