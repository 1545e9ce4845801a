"""``sitemaps`` (``--sitemaps on|off``) and ``sitemap`` (``--sitemap URL``, repeatable) from
TOML, the environment, flags and cluster jobs; bad values exit 2 with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossamer.cli import build_parser, main
from gossamer.flags import settings_from_args
from gossamer.settings import JobSettings, SettingsError, load_model, load_settings

MAP = "http://a.test/sitemap.xml"
FEED = "http://a.test/feed.rss"


def test_from_toml_env_flags_and_jobs(tmp_path: Path) -> None:
    assert load_settings({}, env={}).sitemaps is True
    assert load_settings({}, env={}).sitemap == []
    config = tmp_path / "crawl.toml"
    config.write_text(f'[crawl]\nsitemaps = false\nsitemap = ["{MAP}"]\n')
    settings = load_settings({}, config=config, env={})
    assert (settings.sitemaps, settings.sitemap) == (False, [MAP])
    env = {"GOSSAMER_SITEMAPS": "on", "GOSSAMER_SITEMAP": f"{MAP},{FEED}"}
    settings = load_settings({}, config=config, env=env)
    assert (settings.sitemaps, settings.sitemap) == (True, [MAP, FEED])
    argv = ["crawl", "http://a.test/", "--sitemaps", "off", "--sitemap", MAP, "--sitemap", FEED]
    args = build_parser().parse_args(argv)
    settings = settings_from_args(args, type(load_settings({}, env={})))
    assert (settings.sitemaps, settings.sitemap) == (False, [MAP, FEED])
    argv = ["cluster", "submit", "--redis", "redis://127.0.0.1:1/0", "http://a.test/"]
    args = build_parser().parse_args([*argv, "--sitemaps", "off", "--sitemap", FEED])
    job = settings_from_args(args, JobSettings, skip=("redis", "job"))
    assert (job.sitemaps, job.sitemap) == (False, [FEED])
    assert load_model(JobSettings, config=config, env={}).sitemap == [MAP]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sitemap", "ftp://a.test/s.xml"], "invalid setting 'sitemap': 'ftp://a.test/s.xml'"),
        (["--sitemap", "not a url"], "invalid setting 'sitemap'"),
    ],
)
def test_bad_values_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["crawl", "http://a.test/", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_bad_switch_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["crawl", "http://a.test/", "--sitemaps", "maybe"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--sitemaps" in err and err.count("\n") == 1
    config = tmp_path / "crawl.toml"
    config.write_text('sitemaps = "sometimes"\n')
    with pytest.raises(SettingsError, match="'sitemaps'"):
        load_settings({}, config=config, env={})
