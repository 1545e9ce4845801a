"""Field sources (css, xpath, regex, jsonld, meta), attr, multiple, required and record
containers, on real pages."""

from __future__ import annotations

import json

from tests.rules.conftest import Load, Run

from gossamer.extract.rules import evaluate_body
from gossamer.extract.rules.evaluate import MAX_ERRORS, MAX_VALUE_CHARS

RULE = """
[[rule]]
name = "page"
url = '^https://site\\.test/'
"""

PAGE = """<html><head><title>T</title>
<meta name="Description" content=" A page ">
<meta property="og:title" content="Open Title">
<meta property="og:image" content="/a.png"><meta property="og:image" content="/b.png">
<script type="application/ld+json">
{"@context": "https://schema.org", "@graph": [
  {"@type": "WebPage", "name": "The page"},
  {"@type": ["schema:Article", "Thing"], "headline": "Big news",
   "author": [{"@type": "Person", "name": "Ann"}, {"@type": "Person", "name": "Bob"}],
   "keywords": ["a", "b"], "wordCount": 120}
]}
</script>
<script type="application/LD+JSON; charset=utf-8">
{"@type": "Product", "offers": {"price": "9.50"}}</script>
<script type="application/ld+json">{not json</script>
</head><body>
<h1 class="title">  Hello
   <b>world</b> </h1>
<p id="intro" data-x="1">First <i>para</i></p>
<p>Second</p>
<a href="/one" title="One">1</a> <a href="two">2</a> <a name="no-href">3</a>
<span class="price">Price: 1,234 EUR</span>
</body></html>"""


def field(**keys: object) -> str:
    lines = "\n".join(f"{key} = {json.dumps(value)}" for key, value in keys.items())
    return f"[[rule.field]]\n{lines}\n"


def one(run: Run, **keys: object) -> object:
    found = run(RULE + field(name="v", **keys), PAGE)
    assert len(found.items) == 1, found
    return found.items[0]["v"]


def test_items_hold_the_rule_name_then_the_fields_in_order(run: Run) -> None:
    found = run(RULE + field(name="b", css="p") + field(name="a", css="h1"), PAGE)
    assert found.rule == "page"
    assert list(found.items[0]) == ["b", "a"]
    assert found.rule == "page"


def test_css_text_is_whitespace_normalised(run: Run) -> None:
    assert one(run, css="h1.title") == "Hello world"
    assert one(run, css="p") == "First para"


def test_css_html_and_attributes(run: Run) -> None:
    assert one(run, css="#intro", attr="html") == '<p id="intro" data-x="1">First <i>para</i></p>'
    assert one(run, css="#intro", attr="data-x") == "1"
    assert one(run, css="a", attr="href") == "/one"  # the first with the attribute
    assert one(run, css="a", attr="name") == "no-href"  # skipping those without it


def test_multiple_lists_every_match_and_single_takes_the_first(run: Run) -> None:
    assert one(run, css="p", multiple=True) == ["First para", "Second"]
    assert one(run, css="a", attr="href", multiple=True) == ["/one", "two"]
    assert one(run, css="table") is None
    assert one(run, css="table", multiple=True) == []


def test_xpath_elements_text_attributes_and_numbers(run: Run) -> None:
    assert one(run, xpath="//h1") == "Hello world"
    assert one(run, xpath="//p", multiple=True) == ["First para", "Second"]
    assert one(run, xpath="//p[@id='intro']", attr="html") == (
        '<p id="intro" data-x="1">First <i>para</i></p>'
    )
    assert one(run, xpath="//a", attr="title") == "One"
    assert one(run, xpath="//a/@href", multiple=True) == ["/one", "two"]
    assert one(run, xpath="//p[1]/text()") == "First "
    assert one(run, xpath="count(//p)") == 2
    assert one(run, xpath="string(//h1/b)") == "world"
    assert one(run, xpath="boolean(//table)") is False


def test_an_attribute_of_what_is_not_an_element_is_a_page_error(run: Run) -> None:
    found = run(RULE + field(name="v", xpath="count(//p)", attr="href"), PAGE)
    assert found.items == [{"v": None}]
    assert found.errors == ["xpath 'count(//p)': attr 'href' of a non-element"]


def test_regex_takes_the_first_group_or_the_whole_match(run: Run) -> None:
    assert one(run, regex=r"Price: ([\d,]+)") == "1,234"
    assert one(run, regex=r"\d,\d+") == "1,234"
    assert one(run, regex=r'href="([^"]+)"', multiple=True) == ["/one", "two"]
    assert one(run, regex=r"nowhere(\d)") is None


def test_jsonld_paths(run: Run) -> None:
    assert one(run, jsonld="Article.headline") == "Big news"  # in @graph, prefixed type
    assert one(run, jsonld="Thing.wordCount") == 120
    assert one(run, jsonld="Article.author.name", multiple=True) == ["Ann", "Bob"]
    assert one(run, jsonld="Person.name", multiple=True) == ["Ann", "Bob"]  # nested objects
    assert one(run, jsonld="Article.keywords", multiple=True) == ["a", "b"]
    assert one(run, jsonld="Product.offers.price") == "9.50"  # type attribute, any case
    assert one(run, jsonld="*.name") == "The page"
    assert one(run, jsonld="Article.author") == {"@type": "Person", "name": "Ann"}
    assert one(run, jsonld="Recipe.name") is None


def test_a_jsonld_script_that_is_not_json_is_reported_once(run: Run) -> None:
    found = run(
        RULE + field(name="a", jsonld="Article.headline") + field(name="b", jsonld="*"), PAGE
    )
    assert found.errors == ["jsonld: a script is not JSON"]


def test_meta_by_name_or_property(run: Run) -> None:
    assert one(run, meta="og:title") == "Open Title"
    assert one(run, meta="description") == "A page"
    assert one(run, meta="og:image", multiple=True) == ["/a.png", "/b.png"]
    assert one(run, meta="og:image", multiple=True, process=["absolute_url"]) == [
        "https://site.test/a.png",
        "https://site.test/b.png",
    ]
    assert one(run, meta="twitter:card") is None


def test_required_field_missing_drops_the_item_and_says_so(run: Run) -> None:
    found = run(
        RULE + field(name="t", css="h1") + field(name="x", css="table", required=True), PAGE
    )
    assert found.items == []
    assert found.dropped == 1
    assert found.errors == ["required field 'x' missing: item dropped"]
    found = run(RULE + field(name="t", css="h1", required=True), PAGE)
    assert found.items == [{"t": "Hello world"}] and found.dropped == 0


def test_a_rule_without_fields_gives_no_items(run: Run) -> None:
    found = run(RULE, PAGE)
    assert found.items == [] and found.links is None and found.errors == []


PRODUCTS = """<html><body>
<div class="product"><h2>One</h2><span class="price">1</span><a href="/p/1">more</a></div>
<div class="product"><h2>Two</h2><a href="/p/2">more</a></div>
<div class="product"><span class="price">3</span></div>
<div class="product"><h2>Four</h2><span class="price">4</span></div>
</body></html>"""


def test_record_fields_missing_in_one_container_stay_null_in_its_item(run: Run) -> None:
    rules = (
        RULE
        + '[rule.record]\ncss = "div.product"\n'
        + field(name="name", css="h2")
        + field(name="price", css=".price", process=["int"])
        + field(name="link", css="a", attr="href", process=["absolute_url"])
    )
    found = run(rules, PRODUCTS)
    assert found.items == [
        {"name": "One", "price": 1, "link": "https://site.test/p/1"},
        {"name": "Two", "price": None, "link": "https://site.test/p/2"},
        {"name": None, "price": 3, "link": None},
        {"name": "Four", "price": 4, "link": None},
    ]


def test_xpath_records_are_relative_too(run: Run) -> None:
    rules = (
        RULE
        + "[rule.record]\nxpath = \"//div[@class='product']\"\n"
        + field(name="name", xpath=".//h2", required=True)
        + field(name="price", xpath="./span/text()")
        + field(name="html", regex=r"<h2>(\w+)")
        + field(name="og", meta="og:title")
    )
    found = run(rules, PRODUCTS)
    assert [(i["name"], i["price"], i["html"]) for i in found.items] == [
        ("One", "1", "One"),
        ("Two", None, "Two"),
        ("Four", "4", "Four"),
    ]
    assert found.dropped == 1
    assert found.errors == ["item 3: required field 'name' missing: item dropped"]


TABLE = """<html><body><table>
<tr class="row"><td class="n">One</td><td><a href="/1">x</a></td></tr>
<tr class="row"><td class="n">Two</td><td></td></tr>
</table></body></html>"""


def test_xpath_fields_read_inside_css_containers(run: Run) -> None:
    rules = (
        RULE
        + '[rule.record]\ncss = "tr.row"\n'
        + field(name="n", xpath="./td[1]")
        + field(name="href", xpath=".//a/@href")
        + field(name="css", css="td.n")
    )
    found = run(rules, TABLE)
    assert found.items == [
        {"n": "One", "href": "/1", "css": "One"},
        {"n": "Two", "href": None, "css": "Two"},
    ]
    assert found.errors == []


def test_css_fields_read_inside_xpath_containers(run: Run) -> None:
    cells = RULE + '[rule.record]\nxpath = "//td"\n' + field(name="a", css="a", attr="href")
    assert [item["a"] for item in run(cells, TABLE).items] == [None, "/1", None, None]
    products = (
        RULE
        + "[rule.record]\nxpath = \"//div[@class='product']\"\n"
        + field(name="name", css="h2")
        + field(name="price", css="span.price", process=["int"])
    )
    assert run(products, PRODUCTS).items == [
        {"name": "One", "price": 1},
        {"name": "Two", "price": None},
        {"name": None, "price": 3},
        {"name": "Four", "price": 4},
    ]


def test_a_record_with_no_container_gives_no_items(run: Run) -> None:
    found = run(RULE + '[rule.record]\ncss = "ul.none"\n' + field(name="x", css="li"), PRODUCTS)
    assert found.items == [] and found.errors == []


def test_an_xpath_failing_on_the_page_is_a_page_error(run: Run) -> None:
    found = run(RULE + field(name="x", xpath="foo(1)") + field(name="y", css="h1"), PAGE)
    assert found.items == [{"x": None, "y": "Hello world"}]
    assert found.errors == ["field 'x': xpath: Unregistered function"]


def test_errors_are_capped(run: Run) -> None:
    rows = "".join(f"<div class=r><b>x{i}</b></div>" for i in range(MAX_ERRORS + 10))
    rules = RULE + '[rule.record]\ncss = "div.r"\n' + field(name="n", css="b", process=["int"])
    found = run(rules, f"<html><body>{rows}</body></html>")
    assert len(found.items) == MAX_ERRORS + 10
    assert len(found.errors) == MAX_ERRORS + 1
    assert found.errors[0] == "field 'n': int cannot read 'x0'"
    assert found.errors[-1] == "... and 10 more errors"


def test_long_values_are_cut(run: Run) -> None:
    page = f"<html><body><p>{'x' * (MAX_VALUE_CHARS + 5)}</p></body></html>"
    found = run(RULE + field(name="p", css="p"), page)
    assert len(found.items[0]["p"]) == MAX_VALUE_CHARS
    assert found.errors == [f"field 'p': a value cut to {MAX_VALUE_CHARS} characters"]


def test_pages_are_read_with_their_charset(load: Load) -> None:
    rules = load(RULE + field(name="h", css="h1") + field(name="r", regex="<p>(.+)</p>"))
    body = "<html><body><h1>Привет</h1><p>мир</p></body></html>".encode("cp1251")
    _page, found = evaluate_body(rules, "https://site.test/", body, charset="windows-1251")
    assert found is not None
    assert found.items == [{"h": "Привет", "r": "мир"}]


def test_lone_surrogates_in_jsonld_become_replacement_characters(run: Run) -> None:
    page = '<script type="application/ld+json">{"@type": "A", "n": "x\\ud800y"}</script>'
    found = run(RULE + field(name="n", jsonld="A.n"), page)
    assert found.items[0]["n"] == "x\ufffdy"


def test_hostile_json_ld_is_a_page_error_not_a_crash(run: Run) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    wide = json.dumps({"@type": "A", "n": [{"@type": "B", "m": i} for i in range(30_000)]})
    page = (
        f'<script type="application/ld+json">{deep}</script>'
        f'<script type="application/ld+json">{wide}</script>'
    )
    found = run(RULE + field(name="m", jsonld="B.m", multiple=True), page)
    assert found.errors == ["jsonld: a script is not JSON"]
    assert 0 < len(found.items[0]["m"]) < 30_000  # the walk is bounded


def test_a_pages_items_stop_at_their_size_bound(run: Run) -> None:
    """Items of 250,000 characters each: those past 16 Mi characters are dropped, and the
    page's errors say so; a field's values stop at 4 Mi characters."""
    page = "<ul>" + ("<li>" + "x" * 250_000 + "</li>") * 80 + "</ul>"
    rules = (
        "[[rule]]\nname = 'r'\nurl = '.'\n[rule.record]\ncss = 'li'\n"
        "[[rule.field]]\nname = 't'\ncss = 'li'\n"
    )
    found = run(rules, page)
    assert len(found.items) == 67 and found.dropped == 13
    assert found.errors == ["item 68: the items passed 16777216 characters: the rest dropped"]
    listed = run(rules.replace("[rule.record]\ncss = 'li'\n", "") + "multiple = true\n", page)
    assert len(listed.items[0]["t"]) == 16  # 4 Mi characters: a 17th would pass them
    assert listed.errors == ["css 'li': values over 4194304 characters left out"]
