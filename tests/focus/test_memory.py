"""The focus keeps bounded state whatever the pages hold: the waiting URLs (``max_waiting``, each
one's features capped however many pages link to it), the scorer's fixed weights, the document
frequencies (``max_terms``), and no term longer than ``MAX_WORD_CHARS`` (a page of endless
"words" cannot make the kept terms large)."""

from __future__ import annotations

from gossamer.focus import text
from gossamer.focus.config import FocusConfig
from gossamer.focus.learner import DIMENSIONS
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.text import MAX_WORD_CHARS, DocumentFrequencies, terms
from gossamer.focus.topic import Topic
from gossamer.parse.links import parse_html

PHRASE = "database transactions, isolation levels and locking"
ON_TOPIC = "database transactions lock rows; isolation levels and locking in transactions"


def page(words: str, links: list[tuple[str, str]]) -> bytes:
    anchors = "".join(f'<li><a href="{href}">{anchor}</a></li>' for href, anchor in links)
    return f"<html><body><main><p>{words}</p><ul>{anchors}</ul></main></body></html>".encode()


def judge(policy: FocusPolicy, url: str, body: bytes) -> None:
    parsed = parse_html(body, url)
    policy.judge(url, 0, parsed, None, parsed.links)


def test_no_term_outgrows_the_word_cap() -> None:
    endless = [f"transaction{i}{'x' * 5_000}" for i in range(20)]
    found = terms(" ".join(endless) + " locking")
    assert len(found) == 21
    assert max(map(len, found)) <= MAX_WORD_CHARS
    assert max(map(len, text._STEMS)) <= MAX_WORD_CHARS
    policy = FocusPolicy(Topic(PHRASE))
    judge(policy, "http://x.test/", page(" ".join(endless), [("/a/", " ".join(endless))]))
    kept = policy.topic.df._df  # the counts themselves are what is bounded
    assert max(map(len, kept)) <= MAX_WORD_CHARS


def test_document_frequencies_keep_at_most_max_terms() -> None:
    frequencies = DocumentFrequencies(max_terms=100)
    for document in range(60):
        frequencies.add([f"t{document}x{i}" for i in range(10)])
    assert len(frequencies) <= 100
    assert frequencies.documents == 60


def test_waiting_urls_stay_within_max_waiting() -> None:
    policy = FocusPolicy(Topic(PHRASE), FocusConfig(max_waiting=40))
    for n in range(12):
        links = [(f"/p{n}/{i}/", f"row locks {n} {i}") for i in range(10)]
        judge(policy, f"http://x.test/page{n}/", page("database transactions and locks", links))
    assert policy.stats().waiting == 40
    assert policy.model.weights.size == DIMENSIONS  # the scorer's memory is fixed


def test_a_waiting_urls_features_stay_bounded_however_many_pages_link_to_it() -> None:
    policy = FocusPolicy(Topic(PHRASE))
    for n in range(40):
        anchor = " ".join(f"w{n}x{i}" for i in range(40))
        judge(policy, f"http://x.test/page{n}/", page(ON_TOPIC, [("/hub/", anchor)]))
    assert policy.stats().relevant == 40  # so each page's link joins the features kept
    hub = policy._waiting["http://x.test/hub/"]  # linked from every page
    assert 400 <= len(hub.features) < 400 + 100
