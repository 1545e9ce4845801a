"""Helpers for the testweb tests: a loopback resolver, raw exchanges and a tiny crawler."""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from protego import Protego
from selectolax.lexbor import LexborHTMLParser as HTMLParser
from w3lib.url import canonicalize_url

USER_AGENT = "gossamer/0.1 (testweb tests)"


class LoopbackResolver(AbstractResolver):
    """Resolves every name to 127.0.0.1, as the crawler does for ``*.test``."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host="127.0.0.1",
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


def client(*, auto_decompress: bool = True) -> aiohttp.ClientSession:
    """A session that reaches every ``*.test`` host on loopback."""
    connector = aiohttp.TCPConnector(resolver=LoopbackResolver(), limit=20)
    headers = {"User-Agent": USER_AGENT}
    return aiohttp.ClientSession(
        connector=connector, headers=headers, auto_decompress=auto_decompress
    )


RAW_READ_LIMIT = 5.0  # seconds a raw exchange may take before it gives up


async def wait_until(predicate: Callable[[], bool], seconds: float = 2.0) -> None:
    """Poll ``predicate`` every 10 ms for at most ``seconds``."""
    for _ in range(int(seconds * 100)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met in time")


async def raw_exchange(port: int, request: bytes) -> tuple[bytes, BaseException | None]:
    """Send raw bytes, read until EOF, error or ``RAW_READ_LIMIT``; returns (data, error)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = b""
    error: BaseException | None = None
    try:
        writer.write(request)
        async with asyncio.timeout(RAW_READ_LIMIT):
            while chunk := await reader.read(65536):
                data += chunk
    except (ConnectionError, TimeoutError) as exc:
        error = exc
    finally:
        writer.transport.abort()
    return data, error


def get(host: str, path: str, port: int, *extra: str, keep_alive: bool = False) -> bytes:
    """A raw GET request for ``path`` on virtual host ``host`` (``Connection: close``)."""
    close = [] if keep_alive else ["Connection: close"]
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", *close, *extra, "", ""]
    return "\r\n".join(lines).encode()


def canonical(url: str) -> str:
    """The canonical form the ground truth uses (w3lib agrees on every generated form)."""
    return canonicalize_url(url, keep_fragments=False)


def extract_links(html: str, url: str) -> tuple[set[str], set[str]]:
    """(followable, all) canonical http links of a page, honouring base, nofollow, meta."""
    tree = HTMLParser(html)
    base_node = tree.css_first("base[href]")
    base = urljoin(url, base_node.attributes["href"] or "") if base_node else url
    meta = tree.css_first('meta[name="robots"]')
    page_nofollow = meta is not None and "nofollow" in (meta.attributes["content"] or "").lower()
    followable: set[str] = set()
    found: set[str] = set()
    for node in tree.css("a[href], area[href], link[rel=next][href]"):
        href = node.attributes["href"]
        target = urljoin(base, href or "")
        if urlsplit(target).scheme.lower() != "http":
            continue
        found.add(canonical(target))
        rel = (node.attributes.get("rel") or "").lower().split()
        if not page_nofollow and "nofollow" not in rel:
            followable.add(canonical(target))
    return followable, found


@dataclass
class Crawl:
    """What the tiny reference crawler saw."""

    pages: set[str] = field(default_factory=set)
    others: dict[str, int] = field(default_factory=dict)  # non-200/non-HTML (0: failed)


async def crawl(
    session: aiohttp.ClientSession,
    seeds: list[str],
    *,
    obey_robots: bool = True,
    max_depth: int | None = None,
    limit: int = 5000,
) -> Crawl:
    """Breadth-first crawl of everything linked, with robots.txt (5xx = disallow all)."""
    robots: dict[str, Protego | None] = {}
    result = Crawl()
    seen = {canonical(seed) for seed in seeds}
    queue = deque((url, 0) for url in sorted(seen))
    while queue and len(result.pages) + len(result.others) < limit:
        url, depth = queue.popleft()
        if obey_robots and not await _allowed(session, robots, url):
            continue
        try:
            async with session.get(url, allow_redirects=False) as response:
                body = await response.text(errors="replace")
                if response.status != 200 or response.content_type != "text/html":
                    result.others[url] = response.status
                    continue
        except (aiohttp.ClientError, TimeoutError):
            result.others[url] = 0
            continue
        result.pages.add(url)
        if max_depth is not None and depth >= max_depth:
            continue
        for link in sorted(extract_links(body, url)[0] - seen):
            seen.add(link)
            if _in_web(link, seeds):  # the web's hosts on its port: /poison/ links elsewhere
                queue.append((link, depth + 1))
    return result


def _in_web(url: str, seeds: list[str]) -> bool:
    parts = urlsplit(url)
    return (parts.hostname or "").endswith(".test") and parts.port == urlsplit(seeds[0]).port


async def _allowed(
    session: aiohttp.ClientSession, cache: dict[str, Protego | None], url: str
) -> bool:
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    if origin not in cache:
        async with session.get(origin + "/robots.txt") as response:
            text = await response.text()
            if response.status >= 500:
                cache[origin] = Protego.parse("User-agent: *\nDisallow: /\n")
            elif response.status >= 400:
                cache[origin] = None
            else:
                cache[origin] = Protego.parse(text)
    rules = cache[origin]
    return rules is None or bool(rules.can_fetch(url, USER_AGENT))
