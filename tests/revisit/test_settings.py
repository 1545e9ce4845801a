"""The settings of a continuous crawl: --recrawl, --max-duration, the revisit intervals and
[[revisit]] tables; bad values exit 2 with one line."""

from pathlib import Path

import pytest

from gossamer.cli import main
from gossamer.crawl.revisiting import revisit_bounds
from gossamer.frontier.revisit import Bounds
from gossamer.settings import SettingsError, load_settings


def test_defaults_and_flags(tmp_path: Path) -> None:
    settings = load_settings({}, env={})
    assert not settings.recrawl and settings.max_duration is None
    assert (settings.revisit_initial, settings.revisit_min, settings.revisit_max) == (
        86_400.0,
        3_600.0,
        30 * 86_400.0,
    )
    given = {"recrawl": True, "revisit_min": 1, "revisit_initial": 2, "revisit_max": 60}
    settings = load_settings({**given, "max_duration": 5}, env={})
    assert settings.recrawl and settings.max_duration == 5
    assert (settings.revisit_initial, settings.revisit_min, settings.revisit_max) == (2, 1, 60)


def test_revisit_tables(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(
        "recrawl = true\n"
        '[[revisit]]\nurl = "*/feed*"\nmin = 60\ninitial = 60\n'
        '[[revisit]]\nurl = "re:/news/\\\\d+$"\nmax = 600\n'
        '[[revisit]]\ncontent_type = "application/pdf"\nmin = 86400\ninitial = 86400\n'
    )
    settings = load_settings({}, config=config, env={})
    assert [rule.url for rule in settings.revisit] == ["*/feed*", "re:/news/\\d+$", None]
    assert settings.revisit[2].content_type == "application/pdf"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[[revisit]]\nmin = 5\n", "needs url or content_type"),
        ('[[revisit]]\nurl = "re:("\n', "not a regular expression"),
        ('[[revisit]]\nurl = "*"\nmin = 10\nmax = 5\n', "min > max"),
        ('[[revisit]]\nurl = "*"\nmin = -1\n', ">= 1"),
        ('[[revisit]]\nurl = "*"\nmin = "soon"\n', "Expected `float"),
        ('[[revisit]]\nurl = "*"\nevery = 5\n', "every"),
        ('[[revisit]]\nurl = "*"\nmin = "5"\n', "'revisit.0.min': Expected `float`"),
        ('[[revisit]]\nurl = "*"\ninitial = "60"\n', "'revisit.0.initial'"),
        (f'[[revisit]]\nurl = "re:{"a" * 1998}"\n', "'revisit.0.url': .* length <= 2000"),
        (f'[[revisit]]\ncontent_type = "{"t" * 2001}"\n', "length <= 2000"),
    ],
)
def test_bad_revisit_tables(tmp_path: Path, toml: str, message: str) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(toml)
    with pytest.raises(SettingsError, match=message):
        load_settings({}, config=config, env={})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--revisit-min", "-5"], "'revisit_min'"),
        (["--revisit-min", "0.5"], "'revisit_min'"),
        (["--revisit-min", "10", "--revisit-max", "5"], "more than revisit_max"),
        (["--max-duration", "-1"], "'max_duration'"),
        (["--max-duration", "0"], "'max_duration'"),
    ],
)
def test_bad_values_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["crawl", *argv, "http://a.test/", "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "table", ['min = "5"', 'max = "5"', f'url = "{"*" * 2001}"', "initial = true"]
)
def test_bad_revisit_tables_exit_2_with_one_line(
    table: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(f'recrawl = true\n[[revisit]]\ncontent_type = "text/"\n{table}\n')
    argv = ["--config", str(config), "http://a.test/", "--out", str(tmp_path / "out")]
    assert main(["crawl", *argv]) == 2
    err = capsys.readouterr().err
    assert "'revisit.0." in err and err.count("\n") == 1


@pytest.mark.parametrize("flag", ["--revisit-min", "--revisit-max", "--max-duration"])
def test_non_numbers_exit_2_with_one_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["crawl", flag, "soon", "http://a.test/"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert flag in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--revisit-min", "10", "--revisit-max", "5"], "more than revisit_max"),
        (["--max-duration", "-1"], "'max_duration'"),
    ],
)
def test_cluster_submit_bad_values_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    redis = ["--redis", "redis://127.0.0.1:1/0"]
    assert main(["cluster", "submit", *redis, "--recrawl", *argv, "http://a.test/"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bounds_by_pattern_and_content_type(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(
        "revisit_initial = 500\nrevisit_min = 100\nrevisit_max = 1000\n"
        '[[revisit]]\nurl = "*/feed*"\nmin = 5\ninitial = 5\nmax = 50\n'
        '[[revisit]]\nurl = "re:/news/\\\\d+$"\nmax = 50\n'
        '[[revisit]]\ncontent_type = "application/pdf"\nmin = 5000\n'
        '[[revisit]]\ncontent_type = "image/"\ninitial = 1\n'
    )
    bounds = revisit_bounds(load_settings({}, config=config, env={}))
    assert bounds("http://a.test/feed.xml", None) == Bounds(5, 5, 50)
    assert bounds("http://a.test/news/12", "text/html") == Bounds(50, 50, 50)
    assert bounds("http://a.test/news/12a", "text/html") == Bounds(500, 100, 1000)
    assert bounds("http://a.test/x.pdf", "application/pdf") == Bounds(5000, 5000, 5000)
    assert bounds("http://a.test/x.png", "image/png") == Bounds(100, 100, 1000)
    assert bounds("http://a.test/x.pdf", None) == Bounds(500, 100, 1000)


def test_an_initial_interval_outside_the_bounds_is_moved_in() -> None:
    settings = load_settings({"revisit_min": 1, "revisit_max": 5}, env={})
    assert revisit_bounds(settings)("http://a.test/", None) == Bounds(5, 1, 5)
