"""The page stage on canned fetch results, without a server: which steps a crawl's settings
give it, and the record, links and outcome it makes of an answer."""

from __future__ import annotations

from typing import Any

import pytest

from gossamer.digests.local import LocalDigests
from gossamer.fetch.http import FetchResult
from gossamer.frontier.base import Candidate, Lease
from gossamer.hooks import HookResult, Page
from gossamer.outcomes import Action, Outcome
from gossamer.page import PageConfig, PageResult, PageStage
from gossamer.page.canonical import MAX_HELD_BYTES

pytestmark = pytest.mark.timeout(30)

URL = "http://site.test/a/page.html"
WORDS = " ".join(f"word{i}" for i in range(40))
ARTICLE = (
    "<html><head><title>A  page</title></head><body><nav><a href='/'>home</a></nav>"
    f"<article><h1>Heading</h1><p>{WORDS}.</p><p>{WORDS} again.</p></article>"
    "<a href='/b'>b</a><a href='c.html#part'>c</a><a href='/nofollow' rel='nofollow'>n</a>"
    "</body></html>"
).encode()
LINKS = ["http://site.test/", "http://site.test/b", "http://site.test/a/c.html"]


def fetched(
    body: bytes = ARTICLE,
    status: int | None = 200,
    content_type: str | None = "text/html",
    **fields: Any,
) -> FetchResult:
    """An answer as the fetcher returns it."""
    values: dict[str, Any] = {
        "url": URL,
        "status": status,
        "headers": {"content-type": content_type or ""},
        "body": body,
        "content_type": content_type,
        "charset": None,
        "truncated": False,
        "error": None,
        "started_at": 10.0,
        "fetched_at": 1_700_000_000.12345,
        "elapsed": 0.0123,
        "wire_bytes": len(body),
        "retry_after": None,
        "location": None,
    }
    return FetchResult(**(values | fields))


def lease(url: str = URL, depth: int = 2, hops: int = 0, attempts: int = 0) -> Lease:
    return Lease(url, 1, "site.test", depth, hops, attempts, 0.0, 1)


async def handle(
    stage: PageStage,
    result: FetchResult,
    action: Action = Action.STORE,
    url: str = URL,
    error: str | None = None,
) -> PageResult:
    return await stage.handle(lease(url), result, action, error)


def urls(page: PageResult) -> list[str]:
    return [candidate.url for candidate in page.links]


async def test_a_links_only_crawl_reads_and_follows_only() -> None:
    stage = PageStage(PageConfig(text=False))
    assert stage.steps == ("read", "robots", "canonical", "outlinks")
    page = await handle(stage, fetched())
    record = page.record
    assert urls(page) == LINKS
    assert {candidate.depth for candidate in page.links} == {3}
    assert (record.title, record.outlinks, record.text, record.status) == ("A page", 3, None, 200)
    assert (record.fetched_at, record.elapsed_ms, record.attempts) == (1_700_000_000.123, 12.3, 1)
    assert page.outcome is Outcome.FETCHED


async def test_nofollow_links_are_followed_when_asked() -> None:
    stage = PageStage(PageConfig(text=False, follow_nofollow=True))
    assert "http://site.test/nofollow" in urls(await handle(stage, fetched()))


async def test_a_text_crawl_keeps_the_main_text_and_flags_a_cut() -> None:
    stage = PageStage(PageConfig(max_text_chars=50))
    assert stage.steps == ("read", "robots", "canonical", "text", "outlinks")
    record = (await handle(stage, fetched())).record
    assert record.text is not None and len(record.text) == 50
    assert record.text_chars is not None and record.text_chars > 50
    assert record.flags == ("text-cut",)


async def test_plain_text_has_text_and_no_links() -> None:
    stage = PageStage(PageConfig())
    page = await handle(stage, fetched(WORDS.encode(), content_type="text/plain"))
    assert (page.record.text, page.record.title, list(page.links)) == (WORDS, None, [])


async def test_the_content_language_header_is_the_language_when_the_page_states_none() -> None:
    stage = PageStage(PageConfig())
    headers = {"content-type": "text/html", "content-language": "pt-BR"}
    assert (await handle(stage, fetched(headers=headers))).record.lang == "pt"
    plain = fetched(WORDS.encode(), content_type="text/plain", headers=headers)
    assert (await handle(stage, plain)).record.lang == "pt"
    stated = ARTICLE.replace(b"<html>", b'<html lang="sv">')
    assert (await handle(stage, fetched(stated, headers=headers))).record.lang == "sv"


async def test_a_truncated_pdf_is_recorded_with_its_error() -> None:
    stage = PageStage(PageConfig())
    page = await handle(stage, fetched(b"%PDF-1.4", content_type="application/pdf", truncated=True))
    assert (page.record.error, page.record.text, page.outcome) == (
        "pdf-truncated",
        None,
        Outcome.FAILED,
    )


async def test_the_hook_adds_fields_and_chooses_the_links() -> None:
    seen: list[Page] = []

    def hook(page: Page) -> HookResult:
        seen.append(page)
        return HookResult(fields={"words": len(page.body)}, links=["http://other.test/x"])

    stage = PageStage(PageConfig(text=False, hook=hook))
    assert stage.steps == ("read", "robots", "canonical", "hook", "outlinks")
    page = await handle(stage, fetched())
    assert urls(page) == ["http://other.test/x"]
    assert page.record.extra == {"words": len(ARTICLE)}
    assert seen[0].links == tuple(LINKS)
    assert seen[0].title == "A page" and seen[0].tree is not None


async def test_a_failing_hook_is_the_pages_error_and_counts_as_such() -> None:
    def hook(page: Page) -> None:
        raise RuntimeError("boom")

    stage = PageStage(PageConfig(text=False, hook=hook))
    page = await handle(stage, fetched())
    assert page.record.error == "hook-error: RuntimeError"
    assert page.outcome is Outcome.HOOK_ERROR
    assert urls(page) == LINKS
    assert Outcome.of(page.record.status, page.record.error) is page.outcome


async def test_a_duplicate_names_the_first_page_and_its_links_are_counted_not_followed() -> None:
    stage = PageStage(PageConfig(), digests=LocalDigests())
    assert stage.steps == ("read", "robots", "canonical", "text", "duplicate", "outlinks")
    first = await handle(stage, fetched())
    copy = await handle(stage, fetched(), url="http://site.test/copy.html")
    assert first.record.duplicate_of is None and len(first.links) == 3
    assert copy.record.duplicate_of == URL
    assert (copy.record.outlinks, list(copy.links)) == (3, [])
    assert stage.stats().duplicates_exact == 1


async def test_a_duplicates_links_are_followed_when_asked() -> None:
    stage = PageStage(PageConfig(follow_duplicates=True), digests=LocalDigests())
    await handle(stage, fetched())
    copy = await handle(stage, fetched(), url="http://site.test/copy.html")
    assert copy.record.duplicate_of == URL and len(copy.links) == 3


async def test_a_redirect_leads_to_its_target_one_hop_further() -> None:
    stage = PageStage(PageConfig(max_redirects=1))
    answer = fetched(b"", status=301, content_type=None, location="../b?x=1")
    page = await handle(stage, answer, Action.REDIRECT)
    assert list(page.links) == [Candidate("http://site.test/b?x=1", 2, 1, 0.0)]
    assert (page.record.redirect_to, page.record.error) == ("http://site.test/b?x=1", None)
    assert page.outcome is Outcome.FETCHED

    again = await stage.handle(lease(hops=1), answer, Action.REDIRECT, None)
    assert (again.record.error, list(again.links)) == ("too-many-redirects", [])
    assert again.record.redirect_to == "http://site.test/b?x=1"

    bad = fetched(b"", status=302, content_type=None, location="http://[bad")
    wrong = await handle(stage, bad, Action.REDIRECT)
    assert (wrong.record.redirect_to, wrong.record.error) == (None, "bad-redirect")
    assert wrong.outcome is Outcome.FAILED


async def test_other_answers_are_recorded_without_reading_them() -> None:
    stage = PageStage(PageConfig())
    gone = await handle(stage, fetched(status=404), Action.DROP)
    assert (gone.record.title, gone.record.text, list(gone.links)) == (None, None, [])
    assert gone.outcome is Outcome.FETCHED and gone.record.bytes == len(ARTICLE)
    lost = await handle(
        stage, fetched(b"", status=None, error="timeout"), Action.DROP, error="retries-exhausted"
    )
    assert (lost.record.error, lost.outcome) == ("retries-exhausted", Outcome.FAILED)


def test_outcomes_read_back_from_records_match_how_they_counted() -> None:
    assert Outcome.of(None, "robots") is Outcome.ROBOTS
    assert Outcome.of(200, "internal-error") is Outcome.INTERNAL_ERROR
    assert Outcome.of(200, "hook-error: fields are not JSON") is Outcome.HOOK_ERROR
    assert Outcome.of(None, None) is Outcome.FAILED
    assert Outcome.of(200, "pdf-truncated") is Outcome.FAILED
    assert Outcome.of(404, None) is Outcome.FETCHED


def test_rules_need_their_pool() -> None:
    from gossamer.extract.rules import RuleSet

    with pytest.raises(ValueError, match="RulePool"):
        PageStage(PageConfig(rules=RuleSet(())))


async def test_pages_held_for_their_canonical_url_are_bounded_with_their_headers() -> None:
    """A page held while its canonical URL is awaited counts its headers too: pages of 1 MB
    of headers and no body were held by the thousand (1.5 GB)."""
    stage = PageStage(PageConfig(text=False, canonical="follow"))
    pad = {f"x-pad-{i}": "a" * 8000 for i in range(125)}  # 1 MB
    for i in range(40):
        headers = pad | {"content-type": "text/html", "link": f'</c{i}>; rel="canonical"'}
        url = f"http://site.test/p{i}"
        await handle(stage, fetched(b"<p>x</p>", headers=headers, url=url), url=url)
    canonicals = stage._canonicals
    assert canonicals is not None
    assert 0 < len(canonicals._held) <= MAX_HELD_BYTES // 2_000_000
