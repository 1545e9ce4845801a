"""A page's lead (its heading and first sentence) counts in its relevance, on a small site
served on loopback: a short page whose heading names the topic in the examples' words is
judged on-topic and above a long page that shares the examples' vocabulary without being
about the topic (its body too short to match the examples, the long page's too long to be
missed)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.focus.test_focus_crawl import crawl
from tests.local_app import serve_pages

from gossamer.settings import CrawlSettings, load_model

PHRASE = "bird migration and navigation"
ON_TOPIC = [
    "Migrating birds cross thousands of kilometres between breeding and wintering grounds.",
    "Navigation by the sun compass and the star compass keeps young birds on course at night.",
    "The magnetic sense lets a migrant read the inclination of the earth's field.",
    "Stopover sites along the flyway let birds refuel before the next leg of the journey.",
    "Songbirds migrate at night and rest during the day in woodland and scrub.",
    "Geese fly in skeins along the same flyway every autumn and spring.",
    "Displaced birds correct their heading, which shows true navigation, not only a compass.",
    "Fat reserves double before the flight across the desert and the sea.",
]
GARDEN = [
    "Birds visit the feeder every morning in winter when seeds are scarce.",
    "Sunflower hearts and suet balls bring tits, finches and sparrows to the garden.",
    "Clean the feeder weekly so that disease does not spread among the birds.",
    "A nest box on a north wall stays cool in summer for the breeding pair.",
    "Some birds leave in autumn; the robins stay and defend the garden all winter.",
    "Put water out in frost: birds need to drink and bathe even in the cold season.",
    "Squirrels raid the feeders; a cage keeps them off the seeds.",
    "Migration brings a few visitors to the garden, but most feeder birds are residents.",
]


def prose(sentences: list[str], count: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(sentences) for _ in range(count))


def article(title: str, body: str) -> str:
    head = f"<html><head><title>{title}</title></head>"
    return f"{head}<body><main><h1>{title}</h1>{body}</main></body></html>"


PAGES = {
    "/": article(
        "Birds",
        "<p>Notes on birds.</p><ul>"
        + "".join(
            f'<li><a href="/{name}.html">{name}</a></li>'
            for name in ("navigate", "routes", "flyways", "feeders")
        )
        + "</ul>",
    ),
    "/navigate.html": article("How birds navigate", f"<p>{prose(ON_TOPIC, 60, 1)}</p>"),
    "/routes.html": article("Migration routes", f"<p>{prose(ON_TOPIC, 60, 2)}</p>"),
    "/flyways.html": article(
        "Flyways",
        "<p>Flyways: the routes birds follow on migration.</p><p>Eight are usually named:"
        " Atlantic, Mississippi, Central, Pacific, East Asian, Central Asian, Black Sea and"
        " East Atlantic. Maps below.</p>",
    ),
    "/feeders.html": article("Garden feeders in winter", f"<p>{prose(GARDEN, 90, 3)}</p>"),
}


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async with serve_pages(PAGES) as port:
        yield f"http://site.test:{port}"


async def test_a_short_page_whose_heading_names_the_topic_is_judged_on_topic(
    site: str, tmp_path: Path
) -> None:
    settings = load_model(
        CrawlSettings,
        {
            "seeds": [f"{site}/"],
            "out": tmp_path / "out",
            "resolve": ["*.test=127.0.0.1"],
            "allow_domains": ["test"],
            "quiet": True,
            "max_pages": 10,
            "focus_phrase": PHRASE,
            "focus_examples": [f"{site}/navigate.html", f"{site}/routes.html"],
        },
        env={},
    )
    _, records = await crawl(settings)
    relevance = {r["url"].removeprefix(site): r["relevance"] for r in records}
    assert relevance["/flyways.html"] >= 0.5, relevance
    assert relevance["/feeders.html"] < 0.5, relevance
    assert relevance["/flyways.html"] > relevance["/feeders.html"], relevance
