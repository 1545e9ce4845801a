"""Hub credit: a page's links are worth more once several of its targets proved on-topic,
whatever the page's own words and however it lays out its links (in prose, where no list
holds them): the rest of such a hub's targets rise above those of a hub whose targets
proved off-topic, at the next re-scoring; a crawl of a site whose on-topic pages hide behind one
off-topic chapter page among eight, its links in paragraphs, takes that chapter's pages
first once it met it."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from tests.focus.test_evidence import after_outcomes, focused_crawl
from tests.focus.test_learning import Recorder
from tests.focus.test_policy import ON, PHRASE, html, judge, prose

from gossamer.focus.config import FocusConfig
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic


def chapter(urls: list[str], topic: str = "gardening", seed: int = 3) -> bytes:
    """A chapter page of off-topic prose linking ``urls`` from paragraphs (no list holds
    them), every anchor neutral."""
    links = "".join(f'<p>Read <a href="{url}">this part</a> next.</p>' for url in urls)
    return f"<html><body><main>{prose(topic, seed)}<div>{links}</div></main></body></html>".encode()


async def test_the_other_targets_of_a_hub_whose_targets_proved_on_topic_rise() -> None:
    recorder = Recorder()
    policy = FocusPolicy(Topic(PHRASE), FocusConfig(rescore_every=5), reprioritize=recorder)
    good = [f"http://a{i}.test/page.html" for i in range(12)]
    bad = [f"http://b{i}.test/page.html" for i in range(12)]
    _, first = judge(policy, "http://site.test/good.html", chapter(good))
    _, second = judge(policy, "http://site.test/bad.html", chapter(bad, seed=4))
    first.update(second)
    assert first[good[11]] == first[bad[11]]
    now = await after_outcomes(policy, recorder, first, good, bad, 5)
    assert min(now[url] for url in good[5:]) > max(now[url] for url in bad[5:]), now


CHAPTERS = 8
ON_CHAPTER = 6
"""The chapter holding the on-topic pages, late in the index."""
PAGES = 10


def _site_page(path: str) -> str | None:
    """A flat site: an index of eight chapter pages of gardening prose, each linking ten
    pages from paragraphs; chapter 6's are on the topic (``a0.html`` the example), the others'
    on astronomy; every anchor and URL neutral."""
    if path in ("/", "/index.html"):
        return chapter([f"c{k}.html" for k in range(CHAPTERS)], seed=1).decode()
    name = path.lstrip("/").removesuffix(".html")
    if name[:1] == "c" and name[1:].isdigit() and int(name[1:]) < CHAPTERS:
        k = int(name[1:])
        prefix = "a" if k == ON_CHAPTER else f"x{k}-"
        return chapter([f"{prefix}{i}.html" for i in range(PAGES)], seed=40 + k).decode()
    if name[:1] == "a" and name[1:].isdigit():
        return html(ON, 100 + int(name[1:]), []).decode()
    if name[:1] == "x":
        return html("astronomy", 200 + len(name), []).decode()
    return None


async def test_a_crawl_takes_the_pages_of_an_off_topic_chapter_whose_links_proved_on_topic(
    tmp_path: Path,
) -> None:
    """The example is one of chapter 6's ten pages: once the crawl judged that chapter page
    (off-topic itself, its links in prose), its other pages come before the pages of the
    chapters met earlier."""
    records = await focused_crawl(tmp_path, _site_page, 30, PHRASE, ["a0.html"])
    fetched = [urlsplit(r["url"]).path for r in records if r["status"] == 200]
    assert len(fetched) == 30, fetched
    on_topic = [path for path in fetched if path.startswith("/a")]
    assert len(on_topic) >= PAGES - 1, " ".join(fetched)
