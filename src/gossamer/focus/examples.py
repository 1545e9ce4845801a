"""The example pages of a focused crawl, fetched before it starts.

Each example is fetched like any page: robots.txt first (through the crawl's robots cache,
which keeps the rules for the crawl), one request at a time, redirects followed (up to five
hops) while they keep to the ports the user named: a redirect to an explicit port is followed
only to the origin of the example as given or to a URL in the crawl's scope (a hostile example
page cannot send the crawl to a Redis on 6379 of a host it may reach). The crawl hands in a
fetcher behind its host gate (:mod:`gossamer.frontier.gate`), so the examples' requests,
robots.txt's included, take their host's politeness slot like any page: its delay and
Crawl-delay hold between them and the crawl's own requests. An example that cannot be fetched,
is forbidden by robots.txt, is not a 2xx HTML page or holds no text stops the crawl before it
starts with an :class:`ExampleError` naming it; one that holds none of the phrase's words is
named in a warning (:func:`warn_unrelated`): the crawl goes on, since a page may be on the
topic in other words, but a wrong URL shows. So is one outside the crawl's scope
(:func:`outside`): it still says what the topic is (a page of another site may define it best),
but the crawl fetches none of its site's pages, its neighbours among them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from gossamer.extract import extract
from gossamer.focus.topic import Topic
from gossamer.frontier.robots import RobotsCache, RobotsDeferred
from gossamer.parse.links import parse_html
from gossamer.urls import InvalidURL, Resolver, canonicalize, explicit_port, host_of

log = logging.getLogger(__name__)
_HOPS = 5
_HTML = ("text/html", "application/xhtml+xml")
MAX_LINKS = 2_000


class ExampleError(ValueError):
    """An example page that cannot define the topic."""


class ExampleResult(Protocol):
    @property
    def status(self) -> int | None: ...
    @property
    def body(self) -> bytes: ...
    @property
    def content_type(self) -> str | None: ...
    @property
    def charset(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def location(self) -> str | None: ...


class ExampleFetch(Protocol):
    async def fetch(self, url: str) -> ExampleResult: ...


@dataclass(frozen=True, slots=True)
class Example:
    url: str
    text: str
    links: tuple[str, ...] = ()
    """The page's outlinks (at most ``MAX_LINKS``): the crawl's pages the example leads to
    (its chapter, its neighbours) rise while the crawl finds them on-topic."""


async def fetch_examples(
    urls: Sequence[str],
    fetcher: ExampleFetch,
    robots: RobotsCache | None,
    *,
    extractor: str = "tree",
    in_scope: Callable[[str], bool] | None = None,
) -> list[Example]:
    """The examples' main texts. ``in_scope``: whether the crawl may visit a URL (a redirect
    to an explicit port is followed only there or to the example's own origin)."""
    examples = []
    for given in urls:
        try:
            url = canonicalize(given)
        except InvalidURL as exc:
            raise ExampleError(f"{given!r} is not an http(s) URL: {exc}") from None
        examples.append(await _fetch_one(url, fetcher, robots, extractor, in_scope))
    return examples


def _port_named(url: str, given: str, in_scope: Callable[[str], bool] | None) -> bool:
    """Whether a redirect of the example ``given`` to ``url`` keeps to the ports the user
    named: the scheme's default, the example's own origin's, or any the crawl's scope
    allows."""
    port = explicit_port(url)
    if port is None or (port == explicit_port(given) and host_of(url) == host_of(given)):
        return True
    return in_scope is not None and in_scope(url)


async def _fetch_one(
    url: str,
    fetcher: ExampleFetch,
    robots: RobotsCache | None,
    extractor: str,
    in_scope: Callable[[str], bool] | None = None,
) -> Example:
    given = url
    for _ in range(_HOPS + 1):
        if robots is not None:
            try:
                policy = await robots.get(url)
            except RobotsDeferred:
                raise ExampleError(f"{given}: cannot be fetched (no live proxy)") from None
            if policy.status == "unreachable":
                raise ExampleError(f"{given}: cannot be fetched (no answer from its host)")
            if not policy.allowed(url):
                raise ExampleError(f"{given}: robots.txt forbids {url}")
        result = await fetcher.fetch(url)
        if result.status is not None and 300 <= result.status < 400 and result.location:
            target = Resolver(url).resolve(result.location)
            if target is None:
                where = result.location[:200]
                raise ExampleError(f"{given}: redirects to {where!r}, not an http(s) URL")
            url = canonicalize(target)
            if not _port_named(url, given, in_scope):
                raise ExampleError(f"{given}: redirects to {url}, a port the crawl may not visit")
            continue
        if result.status is None or not 200 <= result.status < 300:
            why = result.error or f"HTTP {result.status}"
            raise ExampleError(f"{given}: cannot be fetched ({why})")
        kind = (result.content_type or "").lower()
        if kind not in _HTML:
            raise ExampleError(f"{given}: not an HTML page ({kind or 'no content type'})")
        page = parse_html(result.body, url, header_charset=result.charset)
        text = extract(page.tree, url, extractor).text if page.tree is not None else ""
        if not text.strip():
            raise ExampleError(f"{given}: holds no text")
        return Example(given, text, tuple(page.links[:MAX_LINKS]))
    raise ExampleError(f"{given}: too many redirects")


def unrelated(examples: Sequence[Example], topic: Topic) -> list[str]:
    """Messages naming the examples that hold none of the phrase's words (none without a
    phrase)."""
    if not topic.has_phrase:
        return []
    return [
        f"focus example {example.url} holds none of the phrase's words: is it on the topic?"
        for example in examples
        if not topic.mentions(example.text)
    ]


def outside(examples: Sequence[Example], in_scope: Callable[[str], bool]) -> list[str]:
    """Messages naming the examples the crawl's scope leaves out (``in_scope`` false)."""
    return [
        f"focus example {example.url} is outside the crawl's scope: it shapes the topic, but "
        "no page of its site is fetched (--allow-domain takes its site in)"
        for example in examples
        if not in_scope(example.url)
    ]


def warn_unrelated(
    examples: Sequence[Example], topic: Topic, in_scope: Callable[[str], bool] | None = None
) -> None:
    """Log :func:`unrelated`'s messages, and :func:`outside`'s with ``in_scope``, as
    warnings."""
    messages = unrelated(examples, topic)
    if in_scope is not None:
        messages += outside(examples, in_scope)
    for message in messages:
        log.warning("%s", message)
