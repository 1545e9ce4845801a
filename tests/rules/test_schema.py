"""Invalid rule documents: every problem is found at load time, one line each, naming the
file, the rule and the field. JSON documents mean what the same TOML means."""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path

import pytest

from gossamer.extract.rules import RuleError, evaluate_body, load_rules
from gossamer.extract.rules.schema import MAX_DOCUMENT_BYTES

HEAD = '[[rule]]\nname = "r"\nurl = "x"\n'


def problems(tmp_path: Path, text: str, name: str = "r.toml") -> list[str]:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    with pytest.raises(RuleError) as raised:
        load_rules([path])
    prefix = f"{path}: "
    assert all(line.startswith(prefix) for line in raised.value.problems), raised.value.problems
    return [line.removeprefix(prefix) for line in raised.value.problems]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "no rules: a document holds one or more [[rule]]"),
        ("rule = 3", "no rules: a document holds one or more [[rule]]"),
        ('name = "x"\n' + HEAD, "unknown key 'name' (only [[rule]] tables)"),
        ("[[rule]\n", "not valid TOML: "),
        ('[[rule]]\nurl = "x"\n', "rule #1: missing key 'name'"),
        (HEAD + 'colour = "blue"\n', "rule 'r': unknown key 'colour'"),
        (HEAD + 'priority = "high"\n', "rule 'r': 'priority' must be an integer"),
        (HEAD + "priority = true\n", "rule 'r': 'priority' must be an integer"),
        (HEAD + 'exclude = "x"\n', "rule 'r': 'exclude' must be a list"),
        (HEAD + 'exclude = ["a", 1]\n', "rule 'r': 'exclude[1]' must be text"),
        ('[[rule]]\nname = "r"\nurl = "("\n', "rule 'r': url: bad regex '(': missing ): ("),
        (HEAD + 'exclude = ["[a"]\n', "rule 'r': exclude: bad regex '[a': missing ]"),
        ('[[rule]]\nname = " "\nurl = "x"\n', "rule ' ': the name must be printable text"),
        (HEAD + "[rule.record]\n", "rule 'r': record: give exactly one of css, xpath"),
        (HEAD + '[rule.record]\ncss = "a"\nxpath = "//a"\n', "rule 'r': record: give exactly"),
        (HEAD + '[rule.record]\ncss = "a["\n', "rule 'r': record: bad CSS selector 'a['"),
        (HEAD + '[rule.record]\nxpath = "//a["\n', "rule 'r': record: bad XPath '//a['"),
        (HEAD + '[rule.record]\ncsss = "a"\n', "rule 'r': record: unknown key 'csss'"),
        (HEAD + "[[rule.field]]\n", "rule 'r': field #1: missing key 'name'"),
        (HEAD + '[[rule.field]]\nname = "f"\n', "rule 'r': field 'f': no source: give one of"),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nxpath = "//a"\n',
            "rule 'r': field 'f': two sources (css, xpath): give exactly one",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nselector = "b"\n',
            "rule 'r': field 'f': unknown key 'selector'",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nmultiple = "yes"\n',
            "rule 'r': field 'f': 'multiple' must be true or false",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = 3\n',
            "rule 'r': field 'f': 'css' must be text",
        ),
        (HEAD + '[[rule.field]]\nname = "f"\ncss = "p:contains(x)"\n', "bad CSS selector"),
        (HEAD + '[[rule.field]]\nname = "f"\ncss = " "\n', "the CSS selector is empty"),
        (HEAD + '[[rule.field]]\nname = "f"\nxpath = "//p[@"\n', "bad XPath '//p[@'"),
        (HEAD + '[[rule.field]]\nname = "f"\nregex = "(x"\n', "bad regex '(x': missing )"),
        (HEAD + "[[rule.field]]\nname = \"f\"\nregex = '(\\w)\\1'\n", "no backreferences"),
        (HEAD + '[[rule.field]]\nname = "f"\njsonld = "A..b"\n', "jsonld path 'A..b' is not"),
        (HEAD + '[[rule.field]]\nname = "f"\nmeta = ""\n', "the meta name is empty"),
        (
            HEAD + '[[rule.field]]\nname = "f"\nmeta = "x"\nattr = "href"\n',
            "attr applies to css and xpath fields, not meta",
        ),
        (HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nattr = "a b"\n', "attr 'a b' is not"),
        (HEAD + '[[rule.field]]\nname = "1st"\ncss = "a"\n', "field '1st': a name is a letter"),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\n' * 2,
            "rule 'r': field 'f': duplicate field name",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nprocess = ["strip", "intt"]\n',
            "rule 'r': field 'f': process[1]: unknown processor 'intt' (known: absolute_url,",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nprocess = ["regex"]\n',
            "process[0]: regex needs options: write it as {regex = ...}",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nprocess = [{regex = "(", group = 1}]\n',
            "process[0]: bad regex '(': missing )",
        ),
        (
            HEAD
            + '[[rule.field]]\nname = "f"\ncss = "a"\nprocess = [{regex = "(a)", group = 2}]\n',
            "process[0]: regex: no group 2 in '(a)'",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nprocess = [{regex = "a", flags = 1}]\n',
            "process[0]: regex: unknown option 'flags'",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nprocess = [{replace = 1}]\n',
            "process[0]: replace: expected text, got int",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nprocess = [{call = "price"}]\n',
            "process[0]: call: no function 'price' in rule_functions (known: none)",
        ),
        (
            HEAD + '[[rule.field]]\nname = "f"\ncss = "a"\nprocess = [3]\n',
            "process[0]: a processor is a name or an inline table",
        ),
        (
            HEAD + '[rule.record]\ncss = "div"\n[[rule.field]]\nname = "f"\nxpath = "//a"\n',
            "field 'f': xpath '//a' inside a record must be relative to it",
        ),
        (
            HEAD + '[rule.record]\nxpath = "//div"\n[[rule.field]]\nname = "f"\nxpath = "//a"\n',
            "field 'f': xpath '//a' inside a record must be relative to it",
        ),
        (HEAD + '[[rule.link]]\ncss = "a["\n', "rule 'r': link #1: bad CSS selector 'a['"),
        (HEAD + '[[rule.link]]\ndeny = ["("]\n', "rule 'r': link #1: deny: bad regex '('"),
        (
            "[[rule]]\nname = \"r\"\nurl = '^http://x/(?!admin)'\n",
            "rule 'r': url: bad regex '^http://x/(?!admin)': invalid perl operator: (?! (RE2",
        ),
        (
            HEAD + "exclude = ['(?>a|ab)c']\n",
            "rule 'r': exclude: bad regex '(?>a|ab)c': invalid perl operator: (?>",
        ),
        (
            HEAD + "[[rule.link]]\nallow = ['a++']\n",
            "rule 'r': link #1: allow: bad regex 'a++': bad repetition operator: ++",
        ),
        (HEAD + '[[rule.link]]\nallow = "x"\n', "rule 'r': link #1: 'allow' must be a list"),
        (HEAD + "[[rule.link]]\nfollow = true\n", "rule 'r': link #1: unknown key 'follow'"),
        (
            HEAD + '[[rule.sample]]\nhtml = "x.html"\nexpect = "x.json"\n',
            "rule 'r': sample #1: missing key 'url'",
        ),
        (
            HEAD + '[[rule.sample]]\nhtml = "nope.html"\nurl = "https://x/"\nexpect = "x.json"\n',
            "rule 'r': sample: no file nope.html (relative to the rule file)",
        ),
        (HEAD + HEAD, "rule 'r': duplicate rule name (also in "),
    ],
)
def test_each_problem_is_named(tmp_path: Path, text: str, expected: str) -> None:
    found = problems(tmp_path, text)
    assert len(found) == 1, found
    assert expected in found[0], found


def test_a_schema_problem_hides_none_of_the_others(tmp_path: Path) -> None:
    text = (
        HEAD + "colour = 1\n"
        '[[rule.field]]\nname = "a"\ncss = "b"\nselector = "x"\n'
        '[[rule.field]]\nname = "c"\nregex = "(x"\n'
        '[[rule.link]]\ncss = "a["\n'
    )
    assert problems(tmp_path, text) == [
        "rule 'r': field 'a': unknown key 'selector'",
        "rule 'r': unknown key 'colour'",
        "rule 'r': field 'c': bad regex '(x': missing ): (x",
        "rule 'r': link #1: bad CSS selector 'a['",
    ]


def test_every_problem_of_a_document_is_listed(tmp_path: Path) -> None:
    text = (
        '[[rule]]\nname = "a"\nurl = "("\n[[rule.field]]\nname = "f"\ncss = "a["\n'
        '[[rule.field]]\nname = "g"\n'
        '[[rule]]\nname = "b"\nurl = "x"\nprority = 1\n'
    )
    assert [line.split(":")[0:2] for line in problems(tmp_path, text)] == [
        ["rule 'a'", " url"],
        ["rule 'a'", " field 'f'"],
        ["rule 'a'", " field 'g'"],
        ["rule 'b'", " unknown key 'prority'"],
    ]


def test_json_problems_are_named_the_same_way(tmp_path: Path) -> None:
    text = json.dumps({"rule": [{"name": "r", "url": "x", "field": [{"name": "f", "css": 1}]}]})
    assert problems(tmp_path, text, "r.json") == ["rule 'r': field 'f': 'css' must be text"]
    assert problems(tmp_path, '{"rule": [', "r.json")[0].startswith("not valid JSON: ")
    nan = '{"rule": [{"name": "r", "url": "x", "priority": NaN}]}'
    assert problems(tmp_path, nan, "r.json") == ["not valid JSON: NaN is not a JSON value"]


def test_files_that_are_not_documents(tmp_path: Path) -> None:
    for name, data in (
        ("r.txt", b'[[rule]]\nname = "r"\nurl = "x"\n'),
        ("r.toml", b"\xff\xfe"),
        ("big.toml", b"#" * (MAX_DOCUMENT_BYTES + 1)),
    ):
        (tmp_path / name).write_bytes(data)
    with pytest.raises(RuleError) as raised:
        load_rules([tmp_path / "r.txt", tmp_path / "r.toml", tmp_path / "big.toml"])
    assert raised.value.problems == [
        f"{tmp_path / 'r.txt'}: a rule document is a .toml or a .json file",
        f"{tmp_path / 'r.toml'}: not UTF-8 text",
        f"{tmp_path / 'big.toml'}: larger than {MAX_DOCUMENT_BYTES} bytes",
    ]
    with pytest.raises(RuleError, match="cannot read: No such file"):
        load_rules([tmp_path / "gone.toml"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RuleError, match=r"no rule documents \(\*\.toml, \*\.json\)"):
        load_rules([empty])


DOCUMENT = """
[[rule]]
name = "sql-command"
url = '^https?://docs\\.example\\.org/sql-[a-z]+\\.html$'
exclude = ['\\?print=']
priority = 2

[rule.record]
xpath = "//div[@class='cmd']"

[[rule.field]]
name = "command"
xpath = ".//h1"
attr = "text"
multiple = false
required = true
process = ["strip", {regex = '(\\w+)', group = 1}, "upper"]

[[rule.field]]
name = "refs"
xpath = ".//a/@href"
multiple = true
process = ["absolute_url"]

[[rule.link]]
css = "div.toc a"
allow = ['/sql-[a-z]+\\.html$']
deny = ['drop']
"""

PAGE = b"""<html><body><div class="toc"><a href="sql-drop.html">d</a>
<a href="sql-select.html">s</a><a href="other.html">o</a></div>
<div class="cmd"><h1> select x</h1><a href="sql-from.html">f</a></div>
<div class="cmd"><p>no heading</p></div></body></html>"""


def test_a_json_document_means_what_the_same_toml_means(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "j").mkdir()
    (tmp_path / "t" / "r.toml").write_text(DOCUMENT, "utf-8")
    as_json = json.dumps(tomllib.loads(DOCUMENT), indent=1)
    (tmp_path / "j" / "r.json").write_text(as_json, "utf-8")
    url = "https://docs.example.org/sql-where.html"
    results = []
    for folder in ("t", "j"):
        rules = load_rules([tmp_path / folder])
        _page, found = evaluate_body(rules, url, PAGE)
        assert found is not None
        results.append(found)
    assert results[0] == results[1]
    assert results[0].items == [
        {
            "command": "SELECT",
            "refs": ["https://docs.example.org/sql-from.html"],
        }
    ]
    assert results[0].links == ["https://docs.example.org/sql-select.html"]
    assert results[0].dropped == 1


def test_json_and_toml_problems_match(tmp_path: Path) -> None:
    bad = DOCUMENT.replace('".//h1"', '".//h1["').replace("priority = 2", 'priority = "2"')
    toml_problems = problems(tmp_path, bad)
    json_problems = problems(tmp_path, json.dumps(tomllib.loads(bad)), "r.json")
    assert (
        toml_problems
        == json_problems
        == [
            "rule 'sql-command': 'priority' must be an integer",
            "rule 'sql-command': field 'command': bad XPath './/h1[': Invalid expression",
        ]
    )
    bad = DOCUMENT.replace('".//h1"', '".//h1["')
    assert problems(tmp_path, bad) == [
        "rule 'sql-command': field 'command': bad XPath './/h1[': Invalid expression"
    ]
    assert problems(tmp_path, bad) == problems(tmp_path, json.dumps(tomllib.loads(bad)), "r.json")


def test_patterns_that_backtrack_without_end_in_re_run_in_linear_time(tmp_path: Path) -> None:
    """Nested and polynomial repetitions load (RE2 does not backtrack) and read long
    hostile texts at once: a URL and a page built to make Python's ``re`` run for hours."""
    rule = (
        "[[rule]]\nname = \"r\"\nurl = '^https?://[^/]+/(\\w+)+$'\n"
        "[[rule.field]]\nname = \"n\"\nregex = '((?:\\d{1,3}[ .]?)+)$'\n"
        '[[rule.field]]\nname = "p"\nregex = \'"sku":"(.*)".*"price":"(.*)"\'\n'
    )
    path = tmp_path / "r.toml"
    path.write_text(rule, "utf-8")
    rules = load_rules([path])
    started = time.monotonic()
    assert rules.select("https://x.test/" + "a" * 5000 + "!") is None
    body = ("<p>" + "1 " * 50_000 + "x" + '"sku":"' * 30_000 + "</p>").encode()
    _page, found = evaluate_body(rules, "https://x.test/page", body)
    assert found is not None and found.items == [{"n": None, "p": None}]
    assert time.monotonic() - started < 2


LONG = 20_000


@pytest.mark.parametrize(
    ("text", "start"),
    [
        (HEAD + f'[[rule.field]]\nname = "f"\nxpath = "{"(" * LONG}"\n', "bad XPath '((("),
        (HEAD + f'[rule.record]\nxpath = "//a[{"1" * LONG}"\n', "bad XPath '//a[111"),
        (HEAD + f'[[rule.field]]\nname = "f"\ncss = "a!{"b" * LONG}"\n', "bad CSS selector 'a!bb"),
        (HEAD + f'[[rule.link]]\ncss = "{"::" * LONG}"\n', "bad CSS selector '::::"),
        (
            HEAD
            + f'[rule.record]\ncss = "li"\n[[rule.field]]\nname = "f"\nxpath = "//{"a" * LONG}"\n',
            "xpath '//aaa",
        ),
        (HEAD + f'[[rule.field]]\nname = "f"\njsonld = "T.{"." * LONG}"\n', "jsonld path 'T..."),
        (HEAD + f'[[rule.field]]\nname = "f"\ncss = "a"\nattr = "{"=" * LONG}"\n', "attr '==="),
        (
            HEAD
            + f'[[rule.field]]\nname = "f"\ncss = "a"\nprocess = [{{date = "%Q{"x" * LONG}"}}]\n',
            "date: bad format '%Qxxx",
        ),
        (
            HEAD
            + '[[rule.field]]\nname = "f"\ncss = "a"\n'
            + f'process = [{{regex = "{"a" * LONG}", group = 3}}]\n',
            "regex: no group 3 in 'aaa",
        ),
    ],
)
def test_a_long_selector_or_path_is_cut_in_its_message(
    tmp_path: Path, text: str, start: str
) -> None:
    """A rule's XPath, CSS selector, path or format is quoted cut to 80 characters, as
    regexes are: a 40 KB expression does not make a 40 KB line."""
    [found] = problems(tmp_path, text)
    assert start in found, found[:200]
    assert len(found) < 500 and "...'" in found, len(found)
