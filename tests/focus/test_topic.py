"""Relevance of pages made for it: on-topic prose above the threshold, off-topic below,
whatever words the pages use; a topic needs words."""

from __future__ import annotations

import random

import pytest

from gossamer.focus.text import stem, terms
from gossamer.focus.topic import Topic, TopicError
from gossamer.testweb.prose import TOPICS

PHRASE = "database transactions, isolation levels and locking"


def page(topic: str, seed: int, paragraphs: int = 4) -> str:
    rng = random.Random(seed)
    return "\n\n".join(" ".join(rng.sample(TOPICS[topic], 4)) for _ in range(paragraphs))


def judged(topic: Topic, pages: list[tuple[str, str]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name, text in pages:
        out.setdefault(name, []).append(topic.judge(text).relevance)
    return out


def mixed_pages(seed: int = 1) -> list[tuple[str, str]]:
    pages = [(t, page(t, seed * 100 + i)) for t in TOPICS for i in range(6)]
    random.Random(seed).shuffle(pages)
    return pages


def test_stemmer_joins_word_forms() -> None:
    assert stem("transactions") == stem("transaction")
    assert stem("locking") == stem("locks") == "lock"
    assert terms("The Isolation levels of the locks") == ["isolat", "level", "lock"]
    assert stem("restoring") == stem("restore") == stem("restored")
    assert stem("encoding") == stem("encode")


def test_on_topic_pages_score_above_the_threshold_with_examples() -> None:
    topic = Topic(PHRASE, [page("database-transactions", 900), page("database-transactions", 901)])
    scores = judged(topic, mixed_pages())
    assert min(scores["database-transactions"]) >= 0.5
    for name, values in scores.items():
        if name != "database-transactions":
            assert max(values) < 0.5, name
    assert max(scores["database-indexing"]) < min(scores["database-transactions"])


def test_a_phrase_alone_ranks_on_topic_pages_first() -> None:
    topic = Topic(PHRASE)
    scores = judged(topic, mixed_pages(2))
    worst_on = min(scores["database-transactions"])
    best_off = max(max(v) for k, v in scores.items() if k != "database-transactions")
    assert best_off < 0.5
    assert worst_on > best_off


def test_long_pages_that_mention_the_phrase_once_stay_below() -> None:
    topic = Topic("regular expressions")
    long_page = page("astronomy", 5, 12) + " A regular expression finds the catalogue numbers."
    focused = "Regular expressions match text. " * 3 + page("image-compression", 6, 1)
    for text in (page("gardening", i) for i in range(10)):
        topic.judge(text)
    assert topic.judge(long_page).relevance < 0.5
    assert topic.judge(focused).relevance > 0.5


def test_example_pages_alone_define_a_topic() -> None:
    topic = Topic("", [page("bread-baking", 1), page("bread-baking", 2)])
    scores = judged(topic, mixed_pages(3))
    assert min(scores["bread-baking"]) >= 0.5
    assert max(max(v) for k, v in scores.items() if k != "bread-baking") < 0.5


@pytest.mark.parametrize("phrase", ["", "   ", "the and of"])
def test_a_topic_without_words_is_refused(phrase: str) -> None:
    with pytest.raises(TopicError):
        Topic(phrase)


def test_link_match_favours_topic_words() -> None:
    topic = Topic(PHRASE)
    assert topic.link_match(topic.words("Isolation levels explained")) > 0.5
    assert topic.link_match(topic.words("Growing tomatoes")) == 0.0


def test_the_examples_say_which_of_the_phrases_words_make_the_topic() -> None:
    """A short reference page on a command of the topic never writes the phrase's word pair
    ("SQL transactions") but dwells on the word the examples dwell on: it covers the phrase,
    while a page on the site's other commands, which says "SQL" as often, does not."""
    examples = [page("database-transactions", 900), page("database-transactions", 901)]
    topic = Topic("SQL transactions and locking", examples)
    for name in TOPICS:  # a site whose every page says "SQL"
        for i in range(3):
            topic.judge(page(name, 50 + i) + " SQL statements and SQL queries run on the server.")
    reference = topic.judge(
        "COMMIT commits the current transaction. All changes made by the transaction become "
        "visible to others and are guaranteed to be durable if a crash occurs. Issuing COMMIT "
        "when not inside a transaction does no harm. Use ROLLBACK to abort a transaction."
    )
    other = topic.judge(
        "SELECT retrieves rows from zero or more tables. The SQL FROM clause names the source "
        "tables, the WHERE clause filters rows and ORDER BY sorts the output of the statement."
    )
    assert reference.phrase is not None and other.phrase is not None
    assert reference.phrase >= 0.5
    assert other.phrase < 0.2
    assert reference.relevance > 2 * other.relevance
