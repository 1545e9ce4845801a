"""A topical test web for focused crawling: several hosts whose pages are about seven topics,
with a known set of on-topic pages (``database-transactions``).

Generated deterministically from a seed. What it holds, to make a focused crawl earn its
figures:

* ``www.test``: the portal (the seed), with news pages about everything but the topic;
* ``docs.test``: a documentation site, one section per topic at different depths; the
  target topic's section lies four levels down, behind hubs padded with release notes;
* ``blog.test``: paginated posts on every topic, each list page showing titles and teasers;
* ``forum.test``: off-topic threads, many linked with misleading anchors taken from the
  target topic's titles;
* ``slow.test``: ``Crawl-delay`` 0.25 s, an archive holding many on-topic pages;
* ``mirror.test``: near-duplicate copies of docs.test pages (one sentence changed).

Pages are paragraphs of prose drawn from per-topic sentence pools (:mod:`prose`); links sit
in navigation, in lists with teasers and inside sentences. ``TopicalServer`` serves every host
from one loopback port (Host header dispatch) and logs each request's arrival time, for
politeness checks.
"""

from __future__ import annotations

import asyncio
import html
import random
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from gossamer.testweb.prose import GENERIC, TITLES, TOPICS
from gossamer.testweb.protocol import write_to

TARGET = "database-transactions"
SLOW_HOST = "slow.test"
SLOW_DELAY = 0.25
HOSTS = ("www.test", "docs.test", "blog.test", "forum.test", SLOW_HOST, "mirror.test")


@dataclass(frozen=True, slots=True)
class TLink:
    host: str
    path: str
    anchor: str
    context: str = ""
    """A sentence the link sits in (empty: a plain list item)."""


@dataclass(slots=True)
class TPage:
    host: str
    path: str
    title: str
    topic: str | None
    paragraphs: list[str]
    links: list[TLink] = field(default_factory=list)


@dataclass(slots=True)
class TopicalWeb:
    """The pages by (host, path), each host's robots.txt, and the target topic."""

    pages: dict[tuple[str, str], TPage]
    robots: dict[str, str]
    target: str = TARGET

    def relevant(self, port: int) -> set[str]:
        """URLs of the on-topic pages (the ground truth)."""
        return {_url(p.host, p.path, port) for p in self.pages.values() if p.topic == self.target}

    def render(self, host: str, path: str, port: int) -> str | None:
        page = self.pages.get((host, path))
        return None if page is None else _render(page, port)


def _url(host: str, path: str, port: int) -> str:
    return f"http://{host}:{port}{path}"


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pages: dict[tuple[str, str], TPage] = {}

    def text(self, topic: str | None, paragraphs: int) -> list[str]:
        pool = list(TOPICS[topic]) if topic else list(GENERIC)
        out = []
        for _ in range(paragraphs):
            sentences = self.rng.sample(pool, min(len(pool), self.rng.randint(3, 5)))
            if self.rng.random() < 0.5:
                sentences.append(self.rng.choice(GENERIC))
            out.append(" ".join(sentences))
        return out

    def title(self, topic: str, n: int) -> str:
        base = TITLES[topic][n % len(TITLES[topic])]
        return base if n < len(TITLES[topic]) else f"{base}, part {n // len(TITLES[topic]) + 1}"

    def add(self, host: str, path: str, title: str, topic: str | None, paras: int = 4) -> TPage:
        page = TPage(host, path, title, topic, self.text(topic, paras) if topic else [])
        self.pages[(host, path)] = page
        return page

    def hub(self, host: str, path: str, title: str) -> TPage:
        page = TPage(host, path, title, None, [f"{title}: an overview of what this part holds."])
        self.pages[(host, path)] = page
        return page

    def teaser(self, page: TPage) -> str:
        return page.paragraphs[0].split(". ")[0] + "." if page.paragraphs else ""


def generate_topical(seed: int = 7) -> TopicalWeb:
    """The topical web (see the module docstring); the same seed gives the same web."""
    b = _Builder(seed)
    others = [t for t in TOPICS if t != TARGET]
    # One host after another, in this order: they draw from one random generator.
    sections = _docs(b, others)
    _slow(b, others, sections[TARGET])
    _mirror(b, others, sections)
    _blog(b, others)
    _forum(b, others)
    _portal(b, others)
    robots = {h: "User-agent: *\nDisallow: /private/\n" for h in HOSTS}
    robots[SLOW_HOST] = f"User-agent: *\nCrawl-delay: {SLOW_DELAY}\nDisallow: /private/\n"
    return TopicalWeb(b.pages, robots)


def _docs(b: _Builder, others: list[str]) -> dict[str, list[TPage]]:
    """docs.test: sections at different depths, the target five levels down, behind hubs
    whose descriptions hint at what lies below (as real documentation's do). Its pages by
    topic."""
    home = b.hub("docs.test", "/", "Documentation")
    sections: dict[str, list[TPage]] = {}
    for topic in TOPICS:
        parent, base, name = home, f"/{topic}/", topic.replace("-", " ")
        if topic == TARGET:
            parent = _deep_chain(b, home, others)
            base, name = "/reference/storage/engine/concurrency/", "Concurrency control"
        hub = b.hub("docs.test", base, name)
        if topic == TARGET:
            hub.topic, hub.paragraphs = TARGET, b.text(TARGET, 2)
        parent.links.append(TLink("docs.test", base, name))
        count = 24 if topic == TARGET else 16
        pages = [b.add("docs.test", f"{base}{n}/", b.title(topic, n), topic) for n in range(count)]
        hub.links += [TLink("docs.test", p.path, p.title) for p in pages]
        sections[topic] = pages
    rng = b.rng
    for pages in sections.values():
        for i, page in enumerate(pages):
            page.links.append(TLink("docs.test", "/", "Documentation home"))
            nxt = pages[(i + 1) % len(pages)]
            page.links.append(TLink("docs.test", nxt.path, f"Next: {nxt.title}"))
            for other in rng.sample(pages, 2):
                sentence = b.teaser(other)
                page.links.append(TLink("docs.test", other.path, other.title, sentence))
            for _ in range(2):
                far = rng.choice(sections[rng.choice(others)])
                page.links.append(TLink("docs.test", far.path, "see also", b.teaser(far)))
    return sections


def _slow(b: _Builder, others: list[str], targets: list[TPage]) -> None:
    """slow.test: an archive of on-topic pages behind a Crawl-delay, linked from some of the
    target's documentation pages (``targets``)."""
    rng = b.rng
    slow_home = b.hub(SLOW_HOST, "/", "Engine notes")
    years = b.hub(SLOW_HOST, "/archive/", "Archive")
    slow_home.links.append(TLink(SLOW_HOST, years.path, "Archive"))
    slow_pages = []
    for year in (2019, 2020, 2021):
        hub = b.hub(SLOW_HOST, f"/archive/{year}/", f"Archive {year}")
        years.links.append(TLink(SLOW_HOST, hub.path, hub.title))
        for n in range(10):
            topic = TARGET if n < 7 else rng.choice(others)
            page = b.add(SLOW_HOST, f"/archive/{year}/{n}/", b.title(topic, n + year), topic)
            hub.links.append(TLink(SLOW_HOST, page.path, page.title, b.teaser(page)))
            slow_pages.append(page)
    for page in slow_pages:
        page.links.append(TLink(SLOW_HOST, "/", "Archive home"))
        for other in rng.sample(slow_pages, 3):
            page.links.append(TLink(SLOW_HOST, other.path, other.title))
    for page in rng.sample(targets, 6):
        page.links.append(
            TLink(
                SLOW_HOST,
                "/archive/2020/",
                "the engine notes archive",
                "More notes on locking and isolation are kept in the engine notes archive.",
            )
        )


def _mirror(b: _Builder, others: list[str], sections: dict[str, list[TPage]]) -> None:
    """mirror.test: near-duplicates of docs pages, the target's deep inside."""
    mirror_home = b.hub("mirror.test", "/", "Mirror")
    mirrored = b.hub("mirror.test", "/m/", "Mirrored sections")
    mirror_home.links.append(TLink("mirror.test", mirrored.path, "mirrored sections"))
    for topic in (*others, TARGET):
        hub = b.hub("mirror.test", f"/m/{topic}/", "Mirrored section")
        hub.topic, hub.paragraphs = topic, b.text(topic, 1)
        mirrored.links.append(TLink("mirror.test", hub.path, "mirrored pages"))
        for page in sections[topic][:14]:
            copy = b.add("mirror.test", f"/m/{topic}{page.path}", page.title, topic)
            copy.paragraphs = list(page.paragraphs)
            copy.paragraphs[-1] = copy.paragraphs[-1] + " " + b.rng.choice(GENERIC)
            hub.links.append(TLink("mirror.test", copy.path, f"mirror of {copy.path}"))
            copy.links.append(TLink("mirror.test", hub.path, "back"))


def _blog(b: _Builder, others: list[str]) -> None:
    """blog.test: paginated posts on every topic."""
    rng = b.rng
    posts = []
    for n in range(90):
        topic = TARGET if n >= 40 and n % 5 == 2 else others[n % len(others)]
        posts.append(b.add("blog.test", f"/posts/{n}/", b.title(topic, n // 7), topic, 3))
    blog_home = b.hub("blog.test", "/", "Blog")
    previous = blog_home
    for k in range(0, len(posts), 10):
        lister = b.hub("blog.test", f"/page/{k // 10}/", f"Posts, page {k // 10 + 1}")
        previous.links.append(TLink("blog.test", lister.path, "Older posts"))
        previous = lister
        lister.links += [
            TLink("blog.test", p.path, p.title, b.teaser(p)) for p in posts[k : k + 10]
        ]
    for post in posts:
        alike = [p for p in posts if p.topic == post.topic and p is not post]
        for other in rng.sample(alike, 2):
            post.links.append(TLink("blog.test", other.path, other.title))
        other = rng.choice([p for p in posts if p.topic != TARGET])
        anchor = rng.choice(TITLES[TARGET]) if rng.random() < 0.5 else other.title
        post.links.append(TLink("blog.test", other.path, anchor))  # often misleading


def _forum(b: _Builder, others: list[str]) -> None:
    """forum.test: off-topic threads, often linked with the target's titles."""
    rng = b.rng
    forum_home = b.hub("forum.test", "/", "Forum")
    threads = []
    for n in range(120):
        topic = others[n % len(others)]
        threads.append(b.add("forum.test", f"/t/{n}/", b.title(topic, n), topic, 2))
    for k in range(0, len(threads), 15):
        board = b.hub("forum.test", f"/board/{k // 15}/", f"Board {k // 15}")
        forum_home.links.append(TLink("forum.test", board.path, board.title))
        for t in threads[k : k + 15]:
            anchor = rng.choice(TITLES[TARGET]) if rng.random() < 0.4 else t.title
            board.links.append(TLink("forum.test", t.path, anchor))
    for t in threads:
        t.links += [TLink("forum.test", o.path, o.title) for o in rng.sample(threads, 3)]


def _portal(b: _Builder, others: list[str]) -> None:
    """www.test: the portal, with news pages that link to the forum with the target's titles."""
    portal = b.hub("www.test", "/", "Portal")
    for host in HOSTS[1:]:
        portal.links.append(TLink(host, "/", f"{host.split('.')[0]} home"))
    for n in range(40):
        topic = others[n % len(others)]
        news = b.add("www.test", f"/news/{n}/", b.title(topic, n), topic, 2)
        portal.links.append(TLink("www.test", news.path, news.title, b.teaser(news)))
        news.links.append(TLink("forum.test", f"/t/{n}/", b.rng.choice(TITLES[TARGET])))


_CHAIN = (
    ("/reference/", "Reference", "The reference covers storage, the query engine and tools."),
    ("/reference/storage/", "Storage", "How the engine stores rows, writes and recovers them."),
    ("/reference/storage/engine/", "Engine internals", "Locks, isolation and the log."),
)


def _deep_chain(b: _Builder, home: TPage, others: list[str]) -> TPage:
    """docs.test's hubs down to the target's section, each padded with release notes."""
    parent = home
    for depth, (path, title, description) in enumerate(_CHAIN):
        hub = b.hub("docs.test", path, title)
        if depth:  # storage and engine internals: introductions to the topic
            hub.topic, hub.paragraphs = TARGET, b.text(TARGET, 2)
        parent.links.append(TLink("docs.test", path, title, description))
        for n in range(8):
            note = b.add("docs.test", f"{path}notes-{n}/", f"Release notes {n}", None)
            note.paragraphs = b.text(b.rng.choice(others), 2)
            hub.links.append(TLink("docs.test", note.path, note.title))
        parent = hub
    return parent


def _render(page: TPage, port: int) -> str:
    esc = html.escape
    nav, listed, inline = [], [], []
    for link in page.links:
        href = esc(_url(link.host, link.path, port) if link.host != page.host else link.path)
        a = f'<a href="{href}">{esc(link.anchor)}</a>'
        if link.context:
            inline.append(f"<p>{esc(link.context)} {a}</p>")
        elif link.anchor.endswith("home") or link.anchor == "back":
            nav.append(a)
        else:
            listed.append(f"<li>{a}</li>")
    body = "".join(f"<p>{esc(p)}</p>" for p in page.paragraphs)
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{esc(page.title)}</title>"
        f"</head><body><nav>{' | '.join(nav)}</nav><main><h1>{esc(page.title)}</h1>{body}"
        f"{''.join(inline)}<ul>{''.join(listed)}</ul></main><footer>Site footer</footer>"
        "</body></html>"
    )


@dataclass(frozen=True, slots=True)
class Hit:
    host: str
    path: str
    monotonic: float


class TopicalServer:
    """Serves a :class:`TopicalWeb` on one loopback port; ``log`` holds every request."""

    def __init__(self, web: TopicalWeb) -> None:
        self.web = web
        self.log: list[Hit] = []
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self.port = 0

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            if self._handlers:  # each ends at its closed connection's end of file
                await asyncio.wait(self._handlers, timeout=5)

    def url(self, host: str, path: str = "/") -> str:
        return _url(host, path, self.port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        handler = asyncio.current_task()
        if handler is not None:  # awaited at the close, not cancelled with the loop
            self._handlers.add(handler)
            handler.add_done_callback(self._handlers.discard)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                target = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 2 else "/"
                host = (
                    next(
                        (
                            v.strip()
                            for k, _, v in (x.partition(":") for x in lines[1:])
                            if k.lower() == "host"
                        ),
                        "",
                    )
                    .rsplit(":", 1)[0]
                    .lower()
                )
                self.log.append(Hit(host, target, time.monotonic()))
                status, kind, body = self._answer(host, target.split("?")[0])
                write_to(
                    writer,
                    f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body,
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def _answer(self, host: str, path: str) -> tuple[str, str, bytes]:
        if path == "/robots.txt" and host in self.web.robots:
            return "200 OK", "text/plain", self.web.robots[host].encode()
        page = self.web.render(host, path, self.port)
        if page is None:
            return "404 Not Found", "text/plain", b"not found"
        return "200 OK", "text/html; charset=utf-8", page.encode()


async def _serve_forever(port: int) -> None:
    web = generate_topical()
    server = TopicalServer(web)
    server._server = await asyncio.start_server(server._serve, "127.0.0.1", port)
    server.port = port
    relevant = len(web.relevant(port))
    print(
        f"topical web on http://www.test:{port}/ (resolve *.test to 127.0.0.1); "
        f"{len(web.pages)} pages, {relevant} about {TARGET}",
        flush=True,
    )
    async with server._server:
        await server._server.serve_forever()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Serve the topical test web on loopback.")
    parser.add_argument("--port", type=int, default=8090)
    asyncio.run(_serve_forever(parser.parse_args().port))
