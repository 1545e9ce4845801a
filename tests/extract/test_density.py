"""The density extractor on a realistic hand-written article page."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from gossamer.extract import extract

PARAGRAPHS = [
    "The city council voted on Tuesday to extend the night bus network to the northern "
    "suburbs, after a two-year trial in which ridership grew faster than expected.",
    "Officials said the new routes would run every twenty minutes between midnight and five "
    "in the morning, and that the cost would be covered by the regional transport budget.",
    "Residents who spoke at the meeting welcomed the decision, although several asked why the "
    "eastern districts, where many hospital staff live, were left out of the first phase.",
]
PAGE = f"""<!doctype html><html lang="en"><head><title>Night buses</title></head><body>
<header><a href="/">Daily Example</a><nav><ul><li><a href="/news">News</a></li>
<li><a href="/sport">Sport</a></li><li><a href="/weather">Weather</a></li></ul></nav></header>
<div id="cookie-banner"><p>We use cookies to improve your experience on our site and to
show you relevant advertising. By continuing you agree to our cookie policy.</p>
<button>Accept</button></div>
<main><article>
<h1>Night buses reach the northern suburbs</h1>
<p class="byline">By <a rel="author" href="/staff/ann">Ann Lee</a></p>
<p>{PARAGRAPHS[0]}</p>
<h2>Every twenty minutes</h2>
<p>{PARAGRAPHS[1]} <a href="/budget">Read the budget</a>.</p>
<ul><li>Route N1 to Northfield</li><li>Route N2 to Hillside</li></ul>
<p>{PARAGRAPHS[2]}</p>
</article>
<section class="related-stories"><h3>Related</h3><ul>
<li><a href="/a">Tram fares frozen for another year across the whole region</a></li>
<li><a href="/b">New cycle lanes planned for the ring road after long consultation</a></li>
</ul></section>
<section id="comments"><h3>3 comments</h3><p>I have waited years for this bus, finally
the council listens to the people who work nights in this city.</p></section>
</main>
<footer><p>© 2024 Daily Example. All rights reserved. Registered in England and Wales
under company number 0000000. Terms, privacy and contact details.</p></footer>
</body></html>"""


def test_keeps_the_article_and_drops_boilerplate() -> None:
    text = extract(LexborHTMLParser(PAGE), "https://daily.example/night-buses").text
    for paragraph in PARAGRAPHS:
        assert paragraph in text
    assert "Every twenty minutes" in text
    assert "Route N1 to Northfield\nRoute N2 to Hillside" in text
    for boilerplate in ("Weather", "cookies", "Tram fares", "waited years", "rights reserved"):
        assert boilerplate not in text
    assert "\n\n" in text


def test_tree_is_left_unchanged() -> None:
    tree = LexborHTMLParser(PAGE)
    before = tree.html
    extract(tree, "https://daily.example/night-buses")
    assert tree.html == before


def test_page_without_text() -> None:
    assert (
        extract(
            "<html><body><nav><a href=/>Home</a></nav></body></html>", "https://a.example/"
        ).text
        == ""
    )
