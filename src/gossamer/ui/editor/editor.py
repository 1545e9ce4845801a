"""The rule editor's routes, mounted at ``/editor`` behind the app's token, CSRF and header
middlewares (:mod:`gossamer.ui.security`)::

    GET  /editor/                      the editor's page (static/editor/index.html)
    GET  /editor/static/...            its script modules and style sheet
    GET  /editor/api/info              processors, documents of --rules-dir, limits
    POST /editor/api/fetch             {"url"}: fetch a sample page -> {"id", "url", "pattern"}
    GET  /editor/frame/{id}            the sample page sanitised, under its own strict CSP
    POST /editor/api/preview           {"rule", "samples": [id], "more": n, "scope"}: the rule
                                       evaluated on the samples and on up to 5 more pages:
                                       links of the samples on their own origin (scheme,
                                       host, port), or with "scope": "pattern" (the page's
                                       "other sites too" box) any the URL pattern matches
    GET  /editor/api/documents/{name}  a document's rules and its samples (as sample ids)
    POST /editor/api/save              {"document", "rule", "samples": [id], "replaces"}

The rule is evaluated by :func:`gossamer.rules_cli.pooled_output`, the code path of ``rules
try``, ``rules test`` and the crawl, in the editor's worker processes
(:class:`gossamer.extract.rules.pool.RulePool`): each page within the time bound of a page
(a page over it is a row with the rule's error), at most `MAX_PREVIEWS` previews at a time
(one more is answered 429), so the app's other requests never wait on a rule. Pages the
editor fetched are kept in memory (the last `MAX_PAGES`), known to the browser by a random
id only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from gossamer.errors import CommandError
from gossamer.extract.rules import PROCESSORS, Document, RuleError, rules_from_documents
from gossamer.extract.rules.pool import RulePool
from gossamer.parse.links import parse_html
from gossamer.redact import redact_text
from gossamer.rules_cli import pooled_output
from gossamer.ui.bodies import read_json
from gossamer.ui.editor.documents import MAX_SAMPLES, DocumentError, Rules, SamplePage, to_toml
from gossamer.ui.editor.fetching import Origin, Page, PageFetcher, origin_of, suggest_pattern
from gossamer.ui.editor.sanitize import SanitizeError, sanitize

__all__ = ["FRAME_CSP", "MAX_MORE", "MAX_PAGES", "EditorConfig", "build_editor"]

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent.parent / "static" / "editor"
MAX_PAGES = 50
MAX_PREVIEWS = 2
"""Previews evaluated at once (each page of one in a worker process, within its bound)."""
MAX_MORE = 5
"""More pages of the site a preview reads (links of the sample that the rule's pattern
matches)."""
SCOPES = ("origin", "pattern")
"""What a preview's further pages may be: links on their sample's origin (the default), or
any link the rule's URL pattern matches (the user's choice: another port of a host is
another service, Redis's as well as a web server's)."""
FRAME_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src 'none'; "
    "form-action 'none'; base-uri 'none'; frame-ancestors 'self'; sandbox allow-same-origin"
)
PROCESSOR_ARGUMENTS = {
    "regex": ["group"],
    "replace": ["with"],
    "join": [],
    "split": [],
    "date": [],
    "default": [],
    "call": [],
}
"""Processors that take an argument (``{regex = '...', group = 1}``), with their options."""


@dataclass(slots=True)
class EditorConfig:
    """What the editor reads with and writes to."""

    fetcher: PageFetcher
    rules: Rules | None
    """``--rules-dir``; None: the editor previews but cannot save."""
    functions: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Pages:
    """Pages fetched or opened, by id (the last `MAX_PAGES`)."""

    pages: OrderedDict[str, Page] = field(default_factory=OrderedDict)

    def add(self, page: Page) -> str:
        ident = secrets.token_hex(8)
        self.pages[ident] = page
        while len(self.pages) > MAX_PAGES:
            self.pages.popitem(last=False)
        return ident

    def get(self, ident: object) -> Page:
        page = self.pages.get(ident) if isinstance(ident, str) else None
        if page is None:
            raise web.HTTPNotFound(text="no such sample page (fetch it again)\n")
        return page

    def by_url(self, url: str) -> Page | None:
        return next((p for p in reversed(self.pages.values()) if p.url == url), None)


@dataclass(slots=True)
class _Previews:
    """The worker processes previews read pages in, and how many previews run."""

    pool: RulePool = field(default_factory=lambda: RulePool(workers=MAX_PREVIEWS))
    running: int = 0


CONFIG = web.AppKey("editor_config", EditorConfig)
PAGES = web.AppKey("editor_pages", _Pages)
PREVIEWS = web.AppKey("editor_previews", _Previews)


def build_editor(config: EditorConfig) -> web.Application:
    """The editor, to :func:`gossamer.ui.app.mount` at ``/editor``."""
    sub = web.Application()
    sub[CONFIG] = config
    sub[PAGES] = _Pages()
    sub[PREVIEWS] = _Previews()
    sub.on_shutdown.append(_stop_previews)  # before the server waits for requests to end
    sub.router.add_get("/", index)
    sub.router.add_static("/static/", STATIC, follow_symlinks=False, append_version=False)
    sub.router.add_get("/api/info", info)
    sub.router.add_post("/api/fetch", fetch)
    sub.router.add_get("/frame/{id}", frame)
    sub.router.add_post("/api/preview", preview)
    sub.router.add_get("/api/documents/{name}", open_document)
    sub.router.add_post("/api/save", save)
    return sub


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, default=str))


async def _body(request: web.Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="a JSON object is expected\n")
    return body


async def index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "index.html")


async def info(request: web.Request) -> web.Response:
    config = request.app[CONFIG]
    rules = config.rules
    names = await asyncio.to_thread(rules.names) if rules is not None else []
    return _json(
        {
            "processors": list(PROCESSORS),
            "arguments": PROCESSOR_ARGUMENTS,
            "can_save": rules is not None,
            "documents": names,
            "max_more": MAX_MORE,
            "max_samples": MAX_SAMPLES,
        }
    )


async def fetch(request: web.Request) -> web.Response:
    body = await _body(request)
    url = body.get("url")
    if not isinstance(url, str) or not url.strip() or len(url) > 4000:
        raise web.HTTPBadRequest(text="give the URL of a sample page\n")
    fetcher = request.app[CONFIG].fetcher
    try:
        fetcher.check(url.strip())
    except CommandError as exc:
        log.warning("editor: refused to fetch %s: %s", url[:200], exc)
        return _json({"error": redact_text(str(exc))[:500]}, status=403)
    (found,) = await fetcher.fetch([url.strip()])
    if isinstance(found, str):
        refused = "blocked-address" in found or "never read" in found
        return _json({"error": redact_text(found)}, status=403 if refused else 502)
    ident = request.app[PAGES].add(found)
    return _json({"id": ident, "url": found.url, "pattern": suggest_pattern(found.url)})


async def frame(request: web.Request) -> web.Response:
    page = request.app[PAGES].get(request.match_info["id"])
    try:
        html = await asyncio.to_thread(_sanitised, page)
    except SanitizeError as exc:
        html = f"<!DOCTYPE html><p>{exc}</p>"
    return web.Response(
        text=html,
        content_type="text/html",
        charset="utf-8",
        headers={"Content-Security-Policy": FRAME_CSP, "X-Frame-Options": "SAMEORIGIN"},
    )


def _sanitised(page: Page) -> str:
    parsed = parse_html(page.body, page.url, header_charset=page.charset)
    text = page.body.decode(parsed.text_encoding, errors="replace")
    return sanitize(text)


async def _stop_previews(app: web.Application) -> None:
    await app[PREVIEWS].pool.close()


async def preview(request: web.Request) -> web.Response:
    previews = request.app[PREVIEWS]
    if previews.running >= MAX_PREVIEWS:
        return _json({"error": f"{MAX_PREVIEWS} previews are running: try again"}, status=429)
    previews.running += 1
    try:
        return await _preview(request, previews.pool)
    finally:
        previews.running -= 1


async def _preview(request: web.Request, pool: RulePool) -> web.Response:
    body = await _body(request)
    pages = request.app[PAGES]
    config = request.app[CONFIG]
    samples = [pages.get(ident) for ident in _ids(body.get("samples"))]
    try:
        rules = _compile(body.get("rule"), config.functions)
    except DocumentError as exc:
        return _json({"problems": exc.problems, "rows": []})
    more = body.get("more", MAX_MORE)
    more = max(0, min(MAX_MORE, more)) if isinstance(more, int) else MAX_MORE
    scope = body.get("scope", "origin")
    if scope not in SCOPES:
        raise web.HTTPBadRequest(text=f"scope is one of {', '.join(SCOPES)}\n")
    within = None if scope == "pattern" else _origins(samples)
    rows = [await _row(pool, rules, page) for page in samples]
    wanted = await asyncio.to_thread(_more_urls, rules, samples, more, within)  # parses pages
    cached = {url: pages.by_url(url) for url in wanted}
    missing = [url for url, page in cached.items() if page is None]
    fetched = dict(zip(missing, await config.fetcher.fetch(missing, within), strict=True))
    for url in wanted:
        found = cached[url] or fetched[url]
        if isinstance(found, str):
            rows.append({"url": url, "sample": False, "fetch_error": found})
            continue
        if cached[url] is None:
            pages.add(found)
        rows.append(await _row(pool, rules, found) | {"sample": False})
    return _json({"problems": [], "rows": rows})


def _ids(value: object) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_SAMPLES:
        raise web.HTTPBadRequest(text=f"samples: a list of up to {MAX_SAMPLES} page ids\n")
    return [str(v) for v in value]


def _compile(rule: object, functions: dict[str, str]) -> Any:
    if not isinstance(rule, dict):
        raise DocumentError(["the rule is a JSON object"])
    rule = {k: v for k, v in rule.items() if k != "sample"}
    text = to_toml([rule])
    try:
        return rules_from_documents([Document("editor.toml", text)], functions)
    except RuleError as exc:
        raise DocumentError(exc.problems) from None


async def _row(pool: RulePool, rules: Any, page: Page) -> dict[str, Any]:
    output = await pooled_output(pool, rules, page.url, page.body, page.charset)
    return {
        "url": page.url,
        "sample": True,
        "rule": output["rule"],
        "items": output["items"][:200],
        "count": len(output["items"]),
        "links": None if output["links"] is None else output["links"][:200],
        "errors": output["errors"],
    }


def _origins(samples: list[Page]) -> frozenset[Origin]:
    return frozenset(o for o in (origin_of(page.url) for page in samples) if o is not None)


def _more_urls(
    rules: Any, samples: list[Page], more: int, within: frozenset[Origin] | None
) -> list[str]:
    """Links of the samples the rule is for (on their sample's origin unless ``within`` is
    None), each once, samples left out."""
    seen = {page.url for page in samples}
    found: list[str] = []
    for page in samples:
        parsed = parse_html(page.body, page.url, header_charset=page.charset)
        own = origin_of(page.url)
        for link in parsed.links:
            if len(found) >= more:
                return found
            if within is not None and origin_of(link) != own:
                continue
            if link not in seen and rules.select(link) is not None:
                seen.add(link)
                found.append(link)
    return found


def _rules_dir(request: web.Request) -> Rules:
    rules = request.app[CONFIG].rules
    if rules is None:
        raise web.HTTPConflict(text="start gossamer ui with --rules-dir DIR to save rules\n")
    return rules


async def open_document(request: web.Request) -> web.Response:
    rules_dir = _rules_dir(request)
    try:
        rules, samples = await asyncio.to_thread(rules_dir.open, request.match_info["name"])
    except DocumentError as exc:
        return _json({"problems": exc.problems}, status=404)
    pages = request.app[PAGES]
    ids = {
        name: [{"id": pages.add(Page(s.url, s.body, None)), "url": s.url} for s in found]
        for name, found in samples.items()
    }
    return _json({"rules": rules, "samples": ids})


async def save(request: web.Request) -> web.Response:
    rules_dir = _rules_dir(request)
    body = await _body(request)
    pages = request.app[PAGES]
    samples = [pages.get(ident) for ident in _ids(body.get("samples"))]
    rule = body.get("rule")
    replaces = body.get("replaces")
    if not isinstance(rule, dict):
        raise web.HTTPBadRequest(text="the rule is a JSON object\n")
    try:
        saved = await asyncio.to_thread(
            rules_dir.save,
            body.get("document"),  # type: ignore[arg-type]  # checked by Rules.path
            rule,
            [SamplePage(p.url, p.body) for p in samples],
            replaces if isinstance(replaces, str) else None,
            request.app[CONFIG].functions,
        )
    except DocumentError as exc:
        return _json({"problems": exc.problems}, status=400)
    except OSError as exc:
        return _json({"problems": [f"cannot write: {exc.strerror}"]}, status=500)
    log.info("editor: saved rule %r in %s", rule.get("name"), saved["document"])
    return _json(saved)
