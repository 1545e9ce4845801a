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
archived exchange, its body withheld) and `gossamer.fetch.headers` (the validators a revisit
sends); never the engine, the crawl wiring or the cluster.
"""

from gossamer.page.stage import (
    RULE_COUNTERS,
    Focus,
    PageConfig,
    PageStage,
    PageStats,
    internal_error,
)
from gossamer.page.state import Fetched, PageResult, PageState, RuleFields, TextFields, Withheld

__all__ = [
    "RULE_COUNTERS",
    "Fetched",
    "Focus",
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
