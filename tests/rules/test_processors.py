"""Every named processor, lists and nulls through them, conversion errors per page, and
functions registered by name (``rule_functions``) called from a rule document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.rules.conftest import Run

from gossamer.extract.rules import PROCESSORS, RuleError

RULE = """
[[rule]]
name = "p"
url = "site"
"""

PAGE = """<html><head><base href="https://site.test/dir/"></head><body>
<p class="v">  Mixed   Case\tText  </p>
<ul><li>b</li><li> a </li><li>c</li></ul>
<span class="n"> -42 </span><span class="f">3.25</span><span class="bad">12abc</span>
<s class="k">1,234</s><s class="kf">-1,234,567.5</s><s class="kbad">12,34</s>
<time>Wed, 01 May 2024 10:00:00 GMT</time><i class="d1">2024-05-01</i><i class="d2">1 May 2024</i>
<i class="d3">May 1, 2024</i><i class="d4">01/05/2024</i><i class="d5">2024-05-01T10:00:00Z</i>
<a href="../x?q=1#frag">x</a><a href="mailto:a@b">m</a>
<b class="csv">red, green,, blue</b>
</body></html>"""


def value(run: Run, process: list[Any], css: str = "p.v", **keys: Any) -> Any:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
    rules = f"{RULE}[[rule.field]]\nname = 'v'\ncss = '{css}'\n{extra}process = {_toml(process)}\n"
    found = run(rules, PAGE)
    return found.items[0]["v"], found.errors


def _toml(process: list[Any]) -> str:
    """A process list as TOML (inline tables for the dicts)."""
    parts = []
    for item in process:
        if isinstance(item, dict):
            pairs = ", ".join(f"{k} = {json.dumps(v)}" for k, v in item.items())
            parts.append("{" + pairs + "}")
        else:
            parts.append(json.dumps(item))
    return "[" + ", ".join(parts) + "]"


@pytest.mark.parametrize(
    ("process", "expected"),
    [
        (["strip"], "Mixed Case Text"),  # text is already normalised by the source
        (["lower"], "mixed case text"),
        (["upper"], "MIXED CASE TEXT"),
        ([{"regex": r"(\w+) (\w+)"}], "Mixed"),
        ([{"regex": r"(\w+) (?P<second>\w+)", "group": "second"}], "Case"),
        ([{"regex": r"(\w+) (\w+)", "group": 2}], "Case"),
        ([{"regex": r"C\w+"}], "Case"),
        ([{"regex": r"nothing(\d)"}], None),
        ([{"replace": " ", "with": "_"}], "Mixed_Case_Text"),
        ([{"replace": "Case "}], "Mixed Text"),
        (["split"], ["Mixed", "Case", "Text"]),
        ([{"split": "Case"}], ["Mixed", "Text"]),
        (["split", "first"], "Mixed"),
        (["split", "last"], "Text"),
        (["split", {"join": "-"}], "Mixed-Case-Text"),
        (["split", "join"], "Mixed Case Text"),
    ],
)
def test_text_processors(run: Run, process: list[Any], expected: Any) -> None:
    assert value(run, process) == (expected, [])


def test_normalize_space_and_strip_on_raw_html(run: Run) -> None:
    got, _ = value(run, [{"regex": '<p class="v">([^<]*)</p>'}, "normalize_space"], css="body")
    assert got is None  # the css value is text, not HTML: the regex finds nothing
    got, _ = value(run, ["normalize_space"], css="p.v", attr="html")
    assert got == '<p class="v"> Mixed Case Text </p>'
    got, _ = value(run, [{"regex": '"v">([^<]*)<'}, "strip"], css="p.v", attr="html")
    assert got == "Mixed   Case\tText"
    got, _ = value(run, [{"regex": '"v">([^<]*)<'}, "normalize_space"], css="p.v", attr="html")
    assert got == "Mixed Case Text"


def test_text_processors_apply_to_each_item_of_a_list(run: Run) -> None:
    assert value(run, ["upper"], css="li", multiple=True) == (["B", "A", "C"], [])
    assert value(run, ["first"], css="li", multiple=True) == ("b", [])
    assert value(run, ["last"], css="li", multiple=True) == ("c", [])
    assert value(run, [{"join": "|"}], css="li", multiple=True) == ("b|a|c", [])
    assert value(run, ["first"], css="table", multiple=True) == (None, [])
    assert value(run, [{"split": ","}], css="b.csv", multiple=True) == (
        ["red", "green", "blue"],
        [],
    )


def test_numbers(run: Run) -> None:
    assert value(run, ["int"], css="span.n") == (-42, [])
    assert value(run, ["float"], css="span.f") == (3.25, [])
    assert value(run, ["float"], css="span.n") == (-42.0, [])
    assert value(run, [{"regex": r"\d+"}, "int"], css="span.bad") == (12, [])
    assert value(run, ["int"], css="span.bad") == (None, ["field 'v': int cannot read '12abc'"])
    assert value(run, ["float"], css="span.bad") == (
        None,
        ["field 'v': float cannot read '12abc'"],
    )
    assert value(run, ["int"], css="span.f") == (None, ["field 'v': int cannot read '3.25'"])
    assert value(run, ["int"], css="table") == (None, [])  # null stays null
    assert value(run, ["int"], css="s.k") == (1234, [])
    assert value(run, ["float"], css="s.kf") == (-1234567.5, [])
    assert value(run, ["int"], css="s.kbad") == (None, ["field 'v': int cannot read '12,34'"])


def test_numbers_from_json_ld_pass_through(run: Run) -> None:
    rules = RULE + "[[rule.field]]\nname = 'v'\njsonld = 'A.n'\nprocess = ['int']\n"
    page = '<script type="application/ld+json">{"@type": "A", "n": 7.0}</script>'
    assert run(rules, page).items[0]["v"] == 7
    rules = RULE + "[[rule.field]]\nname = 'v'\njsonld = 'A.n'\nprocess = ['lower']\n"
    assert run(rules, page).errors == ["field 'v': lower expects text, got float"]


@pytest.mark.parametrize(
    ("css", "process", "expected"),
    [
        ("time", ["date"], "2024-05-01T10:00:00+00:00"),
        ("i.d1", ["date"], "2024-05-01"),
        ("i.d2", ["date"], "2024-05-01"),
        ("i.d3", ["date"], "2024-05-01"),
        ("i.d5", ["date"], "2024-05-01T10:00:00+00:00"),
        ("i.d4", [{"date": "%d/%m/%Y"}], "2024-05-01"),
        ("time", [{"date": "%a, %d %b %Y %H:%M:%S GMT"}], "2024-05-01T10:00:00"),
    ],
)
def test_dates_become_iso_8601(run: Run, css: str, process: list[Any], expected: str) -> None:
    assert value(run, process, css=css) == (expected, [])


def test_a_date_that_does_not_read_is_an_error(run: Run) -> None:
    assert value(run, ["date"], css="i.d4") == (None, ["field 'v': date cannot read '01/05/2024'"])


def test_absolute_url_resolves_against_the_base(run: Run) -> None:
    got = value(run, ["absolute_url"], css="a", attr="href", multiple=True)
    assert got == (["https://site.test/x?q=1", None], [])


def test_default_replaces_null_empty_text_and_empty_lists(run: Run) -> None:
    assert value(run, [{"default": "none"}], css="table") == ("none", [])
    assert value(run, [{"default": 0}], css="table", multiple=True) == (0, [])
    assert value(run, [{"default": "x"}], css="li") == ("b", [])
    assert value(run, [{"replace": "b"}, {"default": "gone"}], css="li") == ("gone", [])


def test_every_processor_is_documented() -> None:
    from gossamer.extract.rules import processors

    doc = processors.__doc__ or ""
    assert all(
        f"``{name}``" in doc or f"``{name}``/" in doc or f"/``{name}``" in doc
        for name in PROCESSORS
    )


FUNCTIONS = """
def price(value):
    return None if value is None else round(float(value.split()[-1]) * 100)

def boom(value):
    raise KeyError(value)

def not_json(value):
    return {1, 2}
"""


def test_call_runs_a_registered_function(run: Run, tmp_path: Path) -> None:
    module = tmp_path / "rulefns.py"
    module.write_text(FUNCTIONS, "utf-8")
    rules = RULE + (
        "[[rule.field]]\nname = 'cents'\ncss = 'span.f'\nprocess = [{call = 'price'}]\n"
        "[[rule.field]]\nname = 'b'\ncss = 'span.f'\nprocess = [{call = 'boom'}]\n"
        "[[rule.field]]\nname = 'j'\ncss = 'span.f'\nprocess = [{call = 'not_json'}]\n"
    )
    found = run(
        rules,
        PAGE,
        price=f"{module}:price",
        boom=f"{module}:boom",
        not_json=f"{module}:not_json",
    )
    assert found.items == [{"cents": 325, "b": None, "j": None}]
    assert found.errors == [
        "field 'b': call 'boom' raised KeyError",
        "field 'j': call 'not_json' returned set, not JSON",
    ]


def test_a_function_that_cannot_be_imported_is_a_document_problem(run: Run) -> None:
    with pytest.raises(RuleError) as raised:
        run(RULE, PAGE, price="no_such_module_here:price")
    assert raised.value.problems == [
        "rule_functions: 'price': hook module 'no_such_module_here' cannot be imported: "
        "No module named 'no_such_module_here'"
    ]


X = "<p class='big'>" + "x" * 200_000 + "</p>"
WORDS = "<p class='big'>" + "x " * 20_000 + "</p>"
ITEMS = "<p class='big'>" + "x" * 1000 + "</p>"


@pytest.mark.parametrize(
    ("process", "multiple", "page", "expected"),
    [
        ([{"replace": "", "with": "w" * 8000}], False, X, "replace: output of 1600208000 "),
        ([{"join": "j" * 100_000}], True, ITEMS * 100, "join: output of 10000000 characters"),
        (["split"], False, WORDS, "split: more than 10000 parts"),
        ([{"replace": "x", "with": "yyyyyyyy"}] * 2, True, X * 3, "replace: output over "),
    ],
)
def test_a_processor_past_its_bounds_is_the_fields_error(
    run: Run, process: list[Any], multiple: bool, page: str, expected: str
) -> None:
    """An output that would hold gigabytes is refused before it is built: the field is null
    and the page's errors say why; the other fields are read."""
    rules = (
        f"{RULE}[[rule.field]]\nname = 'v'\ncss = 'p.big'\nmultiple = {str(multiple).lower()}\n"
        f"process = {_toml(process)}\n[[rule.field]]\nname = 'n'\ncss = 'p.big'\n"
        "process = [{regex = '(x)'}]\n"
    )
    found = run(rules, page)
    assert found.items[0]["v"] is None
    assert found.items[0]["n"] == "x"
    assert any(expected in error for error in found.errors), found.errors
