"""One rule per page (highest priority, ties by document order, exclusions) and link rules
(only the links they select; deny beats allow; regions)."""

from __future__ import annotations

from pathlib import Path

from tests.rules.conftest import Load, Run

from gossamer.extract.rules import evaluate_body, load_rules, read_documents, rules_from_documents

OVERLAPPING = """
[[rule]]
name = "any"
url = 'site\\.test'

[[rule]]
name = "docs"
url = 'site\\.test/docs/'
exclude = ['\\?print=', '/docs/old/']

[[rule]]
name = "docs-high"
url = '/docs/sql-'
priority = 5

[[rule]]
name = "docs-high-too"
url = '/docs/sql-select'
priority = 5

[[rule]]
name = "low"
url = '/docs/'
priority = -1
"""


def test_highest_priority_wins_and_ties_go_to_document_order(load: Load) -> None:
    rules = load(OVERLAPPING)
    picked = {
        url: (rule.name if (rule := rules.select(url)) else None)
        for url in (
            "https://site.test/docs/sql-select.html",
            "https://site.test/docs/sql-insert.html",
            "https://site.test/docs/intro.html",
            "https://site.test/docs/intro.html?print=1",
            "https://site.test/docs/old/x.html",
            "https://site.test/",
            "https://elsewhere.test/docs/",
        )
    }
    assert picked == {
        "https://site.test/docs/sql-select.html": "docs-high",
        "https://site.test/docs/sql-insert.html": "docs-high",
        "https://site.test/docs/intro.html": "any",  # "any" comes first, "docs" ties it
        "https://site.test/docs/intro.html?print=1": "any",
        "https://site.test/docs/old/x.html": "any",
        "https://site.test/": "any",
        "https://elsewhere.test/docs/": "low",
    }


def test_exclusions_let_lower_rules_take_the_page(load: Load) -> None:
    rules = load(OVERLAPPING.replace('name = "any"', 'name = "any"\npriority = -5'))
    assert rules.select("https://site.test/docs/intro.html").name == "docs"  # type: ignore[union-attr]
    assert rules.select("https://site.test/docs/old/x.html").name == "low"  # type: ignore[union-attr]


def test_document_order_runs_across_files_and_directories(tmp_path: Path) -> None:
    for name, rule in (("b.toml", "second"), ("a.json", "first")):
        text = (
            f'[[rule]]\nname = "{rule}"\nurl = "x"\n'
            if name.endswith(".toml")
            else f'{{"rule": [{{"name": "{rule}", "url": "x"}}]}}'
        )
        (tmp_path / name).write_text(text, "utf-8")
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / "ignored.json").write_text("[]", "utf-8")
    assert load_rules([tmp_path]).select("https://x.test/").name == "first"  # type: ignore[union-attr]
    ordered = load_rules([tmp_path / "b.toml", tmp_path / "a.json"])
    assert ordered.select("https://x.test/").name == "second"  # type: ignore[union-attr]


def test_no_rule_for_a_url_gives_none(load: Load) -> None:
    rules = load('[[rule]]\nname = "a"\nurl = "^https://a\\\\.test/"\n')
    _page, found = evaluate_body(rules, "https://b.test/", b"<p>x</p>")
    assert found is None


def test_the_digest_names_the_documents(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text('[[rule]]\nname = "a"\nurl = "x"\n', "utf-8")
    first = load_rules([path])
    again = rules_from_documents(read_documents([path]))
    assert first.digest == again.digest and len(first.digest) == 64
    path.write_text('[[rule]]\nname = "a"\nurl = "y"\n', "utf-8")
    assert load_rules([path]).digest != first.digest
    assert first.documents[0].text == '[[rule]]\nname = "a"\nurl = "x"\n'


PAGE = """<html><head><link rel="next" href="/page/2"></head><body>
<nav class="toc"><a href="/sql-select.html">select</a> <a href="/sql-drop.html">drop</a>
  <a href="/intro.html">intro</a> <a href="mailto:a@b.test">mail</a>
  <a href="/sql-grant.html" rel="nofollow">grant</a></nav>
<div class="body"><a href="/sql-insert.html">insert</a> <a href="https://other.test/sql-x.html">x</a>
  <a href="/sql-select.html">select again</a></div>
</body></html>"""
RULE = '[[rule]]\nname = "r"\nurl = "site"\n'


def test_without_link_rules_the_page_links_are_followed(run: Run) -> None:
    assert run(RULE, PAGE).links is None


def test_link_rules_select_only_their_links(run: Run) -> None:
    found = run(RULE + '[[rule.link]]\ncss = "nav.toc"\nallow = ["/sql-[a-z]+\\\\.html$"]\n', PAGE)
    assert found.links == ["https://site.test/sql-select.html", "https://site.test/sql-drop.html"]


def test_deny_beats_allow(run: Run) -> None:
    rules = RULE + '[[rule.link]]\nallow = ["/sql-"]\ndeny = ["drop", "other\\\\.test"]\n'
    assert run(rules, PAGE).links == [
        "https://site.test/sql-select.html",
        "https://site.test/sql-insert.html",
    ]


def test_a_region_of_links_themselves_and_several_link_rules(run: Run) -> None:
    rules = (
        RULE
        + '[[rule.link]]\ncss = "div.body a"\ndeny = ["other"]\n'
        + '[[rule.link]]\ncss = "head"\n'
        + '[[rule.link]]\nallow = ["intro"]\n'
    )
    assert run(rules, PAGE).links == [
        "https://site.test/sql-insert.html",
        "https://site.test/sql-select.html",
        "https://site.test/intro.html",
    ]  # <head> has no <a>: the rel=next link comes only with the page's links


def test_link_rules_follow_nothing_the_page_would_not(run: Run) -> None:
    found = run(RULE + '[[rule.link]]\ncss = "nav"\n', PAGE)
    assert "https://site.test/sql-grant.html" not in (found.links or [])  # rel=nofollow
    nofollow = PAGE.replace("<head>", '<head><meta name="robots" content="nofollow">')
    assert run(RULE + "[[rule.link]]\n", nofollow).links == []


def test_a_region_that_matches_nothing_follows_nothing(run: Run) -> None:
    assert run(RULE + '[[rule.link]]\ncss = "footer"\n', PAGE).links == []
