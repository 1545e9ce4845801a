"""Rule documents whose cost is the document's fault are refused when read, by ``rules check``
and every command: URL patterns too big to match on every URL in the crawl's loop, date
formats ``strptime`` cannot use. A rule set within the bounds whose choice of a page's rule
could still cost milliseconds chooses it off the crawl's loop; what fails on a page all the
same costs its field only."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gossamer.cli import main
from gossamer.extract.rules import evaluate_body
from gossamer.extract.rules.patterns import MAX_URL_PROGRAM
from gossamer.extract.rules.pool import RulePool
from gossamer.extract.rules.processors import Processor
from gossamer.extract.rules.schema import MAX_SELECT_PROGRAM, load_rules

# 4 KB, 166,504 RE2 instructions: 4 s per 2 KB URL, its DFA out of states
ALTERNATION = "(?:" + "|".join(f"[a-z]{{{i}}}q" for i in range(1, 1000, 3)) + ")"
PAGE = "<html><body><h1>Lamp</h1><span class='date'>2024-05-01</span></body></html>"


def _check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "rules.toml"
    path.write_text(text, "utf-8")
    code = main(["rules", "check", str(path)])
    return code, capsys.readouterr().err.replace(f"{tmp_path}/", "")


@pytest.mark.parametrize(
    ("table", "part"),
    [
        (f"url = '{ALTERNATION}'", "url"),
        (f"url = '/p/'\nexclude = ['{ALTERNATION}']", "exclude"),
        (f"url = '/p/'\n[[rule.link]]\nallow = ['{ALTERNATION}']", "link #1: allow"),
    ],
)
def test_check_refuses_a_url_pattern_too_big_to_match_on_every_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, part: str
) -> None:
    code, err = _check(tmp_path, f'[[rule]]\nname = "slow"\n{table}\n', capsys)
    assert code == 2
    assert f"rules.toml: rule 'slow': {part}: regex '(?:[a-z]{{1}}q|" in err
    assert f"compiles to 166504 RE2 instructions, over {MAX_URL_PROGRAM}" in err


def test_check_refuses_url_patterns_too_big_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    each = f"[a-z]{{{MAX_URL_PROGRAM - 100}}}x"  # under the bound of one pattern
    rules = "".join(f'[[rule]]\nname = "r{i}"\nurl = "{each}{i}"\n' for i in range(3))
    code, err = _check(tmp_path, rules, capsys)
    assert code == 2
    assert "rules.toml: rule 'r2': url: the url and exclude patterns of the rules up to" in err
    assert f"over {MAX_SELECT_PROGRAM}" in err
    code, _err = _check(tmp_path, rules.split('[[rule]]\nname = "r2"')[0], capsys)
    assert code == 0


async def test_a_costly_choice_of_rule_leaves_the_loop_free(tmp_path: Path) -> None:
    # within MAX_SELECT_PROGRAM, and RE2's worst: a new DFA state for each character of the
    # URL (tens of ms for the 40 patterns on a 2 KB URL)
    rules = "".join(f'[[rule]]\nname = "r{i}"\nurl = "(a|b)*a[ab]{{30}}q{i}"\n' for i in range(40))
    (tmp_path / "rules.toml").write_text(rules, "utf-8")
    ruleset = load_rules([tmp_path / "rules.toml"])
    draw = random.Random(7)
    url = "http://a.test/" + "".join(draw.choice("ab") for _ in range(2034))
    turns = 0
    done = False

    async def turn() -> None:
        nonlocal turns
        while not done:
            await asyncio.sleep(0)
            turns += 1

    turning = asyncio.create_task(turn())
    await asyncio.sleep(0)
    pool = RulePool(workers=1)
    try:
        before = turns
        assert await pool.evaluate(ruleset, url, b"<p>x</p>") is None
        during = turns - before
    finally:
        done = True
        await turning
        await pool.close()
    assert during >= 3  # inline, the loop did not turn once until the rule was chosen


def test_check_refuses_a_date_format_strptime_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = '[[rule]]\nname = "h"\nurl = "."\n'
    for name, fmt in [("twice", "%Y%Y"), ("unknown", "%Q"), ("stray", "%d/%m/%")]:
        rules += f'[[rule.field]]\nname = "{name}"\ncss = "span"\nprocess = [{{date = "{fmt}"}}]\n'
    rules += '[[rule.field]]\nname = "fine"\ncss = "span"\nprocess = [{date = "%d/%m/%Y"}]\n'
    code, err = _check(tmp_path, rules, capsys)
    assert code == 2
    assert err.splitlines() == [
        "rules.toml: rule 'h': field 'twice': process[0]: date: bad format '%Y%Y': "
        "redefinition of group name 'Y' as group 2; was group 1 at position 19 "
        "(each directive may appear once)",
        "rules.toml: rule 'h': field 'unknown': process[0]: date: bad format '%Q': "
        "'Q' is a bad directive in format '%Q'",
        "rules.toml: rule 'h': field 'stray': process[0]: date: bad format '%d/%m/%': "
        "stray % in format '%d/%m/%'",
    ]


def test_a_field_failing_at_run_time_costs_that_field_only(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(
        '[[rule]]\nname = "h"\nurl = "."\n[[rule.field]]\nname = "title"\ncss = "h1"\n'
        '[[rule.field]]\nname = "date"\ncss = "span.date"\nprocess = ["date"]\n',
        "utf-8",
    )
    rules = load_rules([path])
    rule = rules.rules[0]

    def unforeseen(value: Any, base_url: str) -> Any:  # as '%Y%Y' did: re.error, no ValueError
        return datetime.strptime(value, "%Y%Y")

    date = dataclasses.replace(rule.fields[1], process=(Processor("date", unforeseen),))
    broken = dataclasses.replace(rule, fields=(rule.fields[0], date))
    rules = dataclasses.replace(rules, rules=(broken,))
    _page, found = evaluate_body(rules, "https://site.test/", PAGE.encode())
    assert found is not None
    assert found.items == [{"title": "Lamp", "date": None}]
    assert found.errors == [
        "field 'date': date: internal error: error(\"redefinition of group name 'Y' as group 2; "
        'was group 1 at position 19")'
    ]
