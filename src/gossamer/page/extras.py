"""The page work a crawl asks for on top of links and text: the rules (``--rules``), read in
the rule pool's worker processes, the page handlers a Python program registered, and the
user's ``--hook``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from gossamer.hooks import Hook, HookError, Page, run_handler, run_hook
from gossamer.page.state import NO_RULES, Fetched, PageState, RuleFields
from gossamer.redact import redact_url
from gossamer.sinks.base import Item
from gossamer.urls import Resolver

if TYPE_CHECKING:
    from gossamer.extract.rules import PageItems, RuleSet
    from gossamer.extract.rules.pool import RulePool
    from gossamer.page.handlers import Route

log = logging.getLogger(__name__)


async def read_rules(
    pool: RulePool, rules: RuleSet, url: str, result: Fetched, follow_nofollow: bool
) -> PageItems | None:
    """What the rule matching ``url`` reads on the page (None when no rule does). The rule
    reads it in a worker process of the pool, within its time bound; a failure or a page over
    the bound becomes the page's rule error, never the crawl's."""
    from gossamer.extract.rules import PageItems
    from gossamer.extract.rules.pool import select

    try:
        return await pool.evaluate(
            rules, url, result.body, result.charset, follow_nofollow=follow_nofollow
        )
    except Exception as exc:
        log.exception("rules failed on %s; recorded, crawl goes on", redact_url(url))
        rule = await select(rules, url)
        return PageItems(rule.name if rule else "", [], None, [f"internal error: {exc!r}"])


def rule_fields(found: PageItems, url: str, fetched_at: float) -> RuleFields:
    """The record's rule fields of what a rule read on the page."""
    items = tuple(Item(url, found.rule, i, fetched_at, item) for i, item in enumerate(found.items))
    return RuleFields(found.rule, len(items), tuple(found.errors), items)


def hook_page(state: PageState) -> Page:
    """What the user's hook sees of a 2xx page."""
    result, parsed = state.result, state.parsed
    return Page(
        url=state.lease.url,
        status=result.status or 0,
        headers=result.headers,
        body=result.body,
        content_type=result.content_type,
        encoding=parsed.text_encoding if parsed is not None else None,
        tree=parsed.tree if parsed is not None else None,
        links=tuple(state.links),
        title=parsed.title if parsed is not None else None,
        content=state.content,
    )


def call_hook(hook: Hook, page: Page) -> tuple[dict[str, Any] | None, list[str] | None, str | None]:
    """The hook's fields, its links (None: the page's own) and its error, if it failed."""
    try:
        extra, replaced = run_hook(hook, page)
    except HookError as exc:
        log.warning("%s on %s", exc.__cause__ or exc, redact_url(page.url))
        return None, None, str(exc)
    return extra, replaced, None


async def call_handler(
    route: Route, page: Page
) -> tuple[tuple[list[dict[str, Any]], list[str]] | None, str | None]:
    """The handler's items and links, or its error if it failed (logged as a hook's)."""
    try:
        return await run_handler(route.function, page, route.timeout), None
    except HookError as exc:
        log.warning("%s (%s) on %s", exc.__cause__ or exc, route.name, redact_url(page.url))
        return None, str(exc)


def handler_fields(
    rules: RuleFields | None, name: str, items: list[dict[str, Any]], url: str, result: Fetched
) -> RuleFields:
    """The record's rule fields with a handler's items after a rule's (if one matched): the
    record names the rule, else the handler."""
    rules = rules or NO_RULES
    fetched_at = round(result.fetched_at, 3)
    start = len(rules.found)
    found = tuple(Item(url, name, start + i, fetched_at, item) for i, item in enumerate(items))
    return RuleFields(
        rules.rule or name, rules.items + len(found), rules.errors, rules.found + found
    )


def resolve_links(url: str, links: list[str]) -> list[str]:
    """A handler's links made absolute against the page's URL; one no URL parser takes is
    left out."""
    resolver = Resolver(url)
    resolved = []
    for link in links:
        try:
            absolute = resolver.resolve(link)
        except ValueError:
            continue
        if absolute is not None:
            resolved.append(absolute)
    return resolved
