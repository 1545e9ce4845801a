"""The page stage: what a crawl does with a page once it is fetched.

:class:`PageStage` takes a finished fetch and returns the URL's record and the links to follow
(:class:`PageResult`), through a short pipeline of steps over one :class:`PageState`: read
(decode, the guarded parse, links; or plain text), robots directives (``X-Robots-Tag``,
robots meta: `directives`), the canonical URL (`canonical`), rules, content (main text,
metadata, a PDF's text), the user's hook, content digests, focus relevance; with
``--recrawl``, what changed since the URL's last fetch (``freshness``). The engine only hands
it each answer and takes back what it returns (``state``: the values; ``read``: parsing and
content fields; ``extras``: rules and the hook; ``stage``: the pipeline).

This package may import the standard library, `gossamer.parse`, `gossamer.extract`,
`gossamer.hooks`, `gossamer.digests` (content digests), `gossamer.frontier.base` (the
candidates it returns), `gossamer.frontier.revisit` and `gossamer.frontier.revisits` (a
continuous crawl's interval policy and revisit state), `gossamer.sinks.base` (the record),
`gossamer.outcomes`, `gossamer.redact`, `gossamer.urls`, `gossamer.fetch.exchange` (an
archived exchange, its body withheld), `gossamer.fetch.headers` (the validators a revisit
sends) and `gossamer.focus.anchors` (a parse worker reads the texts of a page's links for a
focus, whose policy the stage knows by its protocol alone); never the engine, the crawl
wiring or the cluster.

The names below are loaded on first use: a parse worker (``sandboxed``) imports the
directives and the canonical tag without the stage.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gossamer.page.stage import (
        RULE_COUNTERS,
        Focus,
        PageConfig,
        PageStage,
        PageStats,
    )
    from gossamer.page.state import (
        Fetched,
        Kept,
        PageResult,
        PageState,
        RuleFields,
        TextFields,
        Withheld,
        internal_error,
    )

__all__ = [
    "RULE_COUNTERS",
    "Fetched",
    "Focus",
    "Kept",
    "PageConfig",
    "PageResult",
    "PageStage",
    "PageState",
    "PageStats",
    "RuleFields",
    "TextFields",
    "Withheld",
    "internal_error",
]

_STATE = frozenset(
    {"Fetched", "Kept", "PageResult", "PageState", "RuleFields", "TextFields", "Withheld"}
    | {"internal_error"}
)


def __getattr__(name: str) -> Any:
    """A name of ``__all__``, imported from its module on first use."""
    if name not in __all__:
        raise AttributeError(f"module 'gossamer.page' has no attribute {name!r}")
    module = "gossamer.page.state" if name in _STATE else "gossamer.page.stage"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
