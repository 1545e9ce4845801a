"""Rule documents whose cost is the document's fault are refused when read, by ``rules check``
and every command: URL patterns too big to match on every URL in the crawl's loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossamer.cli import main
from gossamer.extract.rules.patterns import MAX_URL_PROGRAM
from gossamer.extract.rules.schema import MAX_SELECT_PROGRAM

# 4 KB, 166,504 RE2 instructions: 4 s per 2 KB URL, its DFA out of states
ALTERNATION = "(?:" + "|".join(f"[a-z]{{{i}}}q" for i in range(1, 1000, 3)) + ")"


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
