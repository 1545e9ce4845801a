"""Settings: TOML < environment < flags, and clear errors naming the field."""

from pathlib import Path

import pytest

from gossamer.cli import main
from gossamer.settings import SettingsError, load_settings


def test_precedence_toml_env_flags(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text('[crawl]\nconcurrency = 10\nper_host = 3\ndelay = 1.5\nuser_agent = "t"\n')
    env = {"GOSSAMER_PER_HOST": "4", "GOSSAMER_ALLOW_DOMAINS": "a.org, b.org", "OTHER": "x"}
    settings = load_settings({"delay": 0.25, "concurrency": None}, config=config, env=env)
    assert settings.concurrency == 10
    assert settings.per_host == 4
    assert settings.delay == 0.25
    assert settings.user_agent == "t"
    assert settings.allow_domains == ["a.org", "b.org"]


def test_defaults() -> None:
    settings = load_settings({}, env={})
    assert settings.user_agent.startswith("gossamer/")
    assert settings.robots is True
    assert settings.max_body_bytes == 10 * 1024 * 1024
    assert settings.out == Path("crawl-out")


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"per_host": "many"}, "per_host"),
        ({"delay": -1}, "delay"),
        ({"max_pages": 0}, "max_pages"),
        ({"user_agent": "a\nb"}, "user_agent"),
        ({"no_such_thing": 1}, "no_such_thing"),
    ],
)
def test_invalid_values_name_the_field(flags: dict[str, object], field: str) -> None:
    with pytest.raises(SettingsError, match=f"'{field}'"):
        load_settings(flags, env={})


def test_bad_toml_is_a_settings_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("concurrency = [")
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_settings({}, config=config, env={})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["crawl", "--concurrency", "0", "http://a.test/"], "'concurrency'"),
        (["crawl", "ftp://a.test/"], "'seeds'"),
        (["crawl"], "'seeds'"),
        (["crawl", "--config", "/nonexistent.toml", "http://a.test/"], "cannot read"),
    ],
)
def test_cli_exits_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_malformed_flag_value_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["crawl", "--max-pages", "abc", "http://a.test/"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--max-pages" in err and err.count("\n") == 1
