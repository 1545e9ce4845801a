"""Bad user input gets one clear line naming the setting, never a traceback: the command
(exit 2, one line on stderr) and the Python API (:class:`SettingsError` naming the field,
from the model's constructor or when a ``Crawl`` takes the settings, as docs/api.md says)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gossamer
from gossamer import Crawl, CrawlSettings, SettingsError
from gossamer.cli import main
from gossamer.fetch.dns import parse_resolve_overrides
from gossamer.settings import AuthSettings, InvalidSetting, load_settings
from gossamer.settings.revisit import RevisitRule

SEED = "http://127.0.0.1:19650/"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--resolve", "nonsense"], "invalid setting 'resolve': invalid resolve override"),
        (["--resolve", "a.test=1.2.3.4,x"], "invalid setting 'resolve'"),
        (["--resolve", "a b=1.2.3.4"], "invalid setting 'resolve'"),
        (["--host-page-budgets", "*=-1"], "invalid setting 'host_page_budgets': "),
        (["--host-page-budgets", "*=0"], "invalid setting 'host_page_budgets': "),
        (["--allow-domain", ""], "invalid setting 'allow_domains': '' is not a domain"),
        (["--allow-domain", "."], "invalid setting 'allow_domains': '.' is not a domain"),
        (["--allow-domain", "*.example.org"], "invalid setting 'allow_domains'"),
    ],
)
def test_bad_flags_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["crawl", SEED, *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('resolve = ["nonsense"]\n', "invalid setting 'resolve'"),
        ("[host_page_budgets]\n'*' = 0\n", "invalid setting 'host_page_budgets'"),
        ('allow_domains = ["."]\n', "invalid setting 'allow_domains'"),
        ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nests arrays or tables too deeply"),
        ("a = " + "{b = " * 20_000 + "1" + "}" * 20_000 + "\n", "too deeply"),
    ],
    ids=["resolve", "budget", "domain", "deep-arrays", "deep-tables"],
)
def test_bad_config_files_exit_2_with_one_line(
    text: str, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(text)
    argv = ["crawl", SEED, "--config", str(config), "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_good_values_still_load(tmp_path: Path) -> None:
    flags = {
        "resolve": "*.test=127.0.0.1,a.test=[::1],*=10.0.0.1",
        "host_page_budgets": "*.test=1,docs.test=500",
        "allow_domains": "test,.example.org,Example.COM.,bücher.de,127.0.0.1,::1,[::1]",
    }
    settings = load_settings(flags, env={})
    assert settings.host_page_budgets == {"*.test": 1, "docs.test": 500}
    assert len(parse_resolve_overrides(settings.resolve)) == 3
    config = tmp_path / "crawl.toml"
    config.write_text("a = " + "[" * 50 + "]" * 50 + "\n")
    with pytest.raises(SettingsError, match="'a': not a setting"):
        load_settings({}, config=config, env={})  # a deep but bounded file is read


BAD_VALUES: list[tuple[dict[str, Any], str]] = [
    # types and bounds: checked when a Crawl takes the settings
    ({"concurrency": 0}, "concurrency"),
    ({"max_pages": 0}, "max_pages"),
    ({"delay": -1.0}, "delay"),
    ({"delay": float("nan")}, "delay"),
    ({"user_agent": ""}, "user_agent"),
    ({"canonical": "never"}, "canonical"),
    ({"robots": "maybe"}, "robots"),
    ({"seeds": [3]}, "seeds.0"),
    ({"allow_ports": [0]}, "allow_ports.0"),
    ({"out": 3}, "out"),
    ({"host_page_budgets": {"*": -1}}, "host_page_budgets"),
    ({"host_page_budgets": {"*": 0}}, "host_page_budgets"),
    ({"rule_functions": {"f": 3}}, "rule_functions"),
    ({"render_block": ["video"]}, "render_block.0"),
    ({"max_duration": 0.0}, "max_duration"),
    # another type than the field's: the model's checks leave it to the conversion
    ({"user_agent": 3}, "user_agent"),
    ({"focus_phrase": 3}, "focus_phrase"),
    ({"metrics_bind": 3}, "metrics_bind"),
    ({"resolve": [3]}, "resolve.0"),
    ({"render_url": [3]}, "render_url.0"),
    ({"allow_domains": [3]}, "allow_domains.0"),
    ({"proxies": "http://p.test/"}, "proxies"),
    ({"auth": {"domain": "a.test"}}, "auth"),
    ({"revisit": [{"url": "*", "nope": 1}]}, "revisit.0.nope"),
    ({"auth": [AuthSettings(domain=3, type="bearer", token_env="T")]}, "auth.0.domain"),
    ({"revisit": [RevisitRule(url=3)]}, "revisit.0.url"),
    # the model's own checks: raised by its constructor
    ({"user_agent": "x\r\ny"}, "user_agent"),
    ({"robots_token": "a\tb"}, "robots_token"),
    ({"focus_phrase": "a\x00b"}, "focus_phrase"),
    ({"focus_phrase": " "}, "focus_phrase"),
    ({"focus_mode": "hard"}, "focus_mode"),
    ({"focus_threshold": 0.7}, "focus_threshold"),
    ({"focus_examples": ["ftp://a.test/"]}, "focus_examples"),
    ({"render_url": ["(a"]}, "render_url"),
    ({"render_url": ["/a(?=b)"]}, "render_url"),  # lookaround: RE2 cannot run it in linear time
    ({"resolve": ["nonsense"]}, "resolve"),
    ({"allow_domains": [""]}, "allow_domains"),
    ({"allow_domains": ["."]}, "allow_domains"),
    ({"proxies": ["ftp://p.test/"]}, "proxies"),
    ({"sitemap": ["not a url"]}, "sitemap"),
    ({"metrics_bind": "a b"}, "metrics_bind"),
    ({"metrics_hosts": ["a b"]}, "metrics_hosts"),
    ({"rule_functions": {"1f": "m:f"}}, "rule_functions"),
    ({"revisit_min": 100.0, "revisit_max": 1.0}, "revisit_min"),
    ({"cookies": "off", "auth": [{"domain": "a.test", "type": "cookies"}]}, "cookies"),
]


def _auth(fields: dict[str, Any], tmp_path: Path) -> AuthSettings:
    return AuthSettings(**fields, cookies_file=tmp_path / "c.txt")


@pytest.mark.parametrize(("fields", "field"), BAD_VALUES, ids=lambda v: str(v)[:40])
def test_the_api_raises_settings_error_naming_the_field(
    fields: dict[str, Any], field: str, tmp_path: Path
) -> None:
    if isinstance(fields.get("auth"), list):  # a table of the cookies case: built here
        auth = [_auth(a, tmp_path) if isinstance(a, dict) else a for a in fields["auth"]]
        fields = fields | {"auth": auth}
    with pytest.raises(SettingsError) as info:
        Crawl(CrawlSettings(**({"seeds": [SEED], "out": tmp_path / "out"} | fields)))
    assert isinstance(info.value, InvalidSetting), info.value
    assert info.value.field == field, info.value
    assert str(info.value).startswith(f"invalid setting '{field}': ")


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: AuthSettings(domain="a.test", type="bearer"), "token_env"),
        (lambda: AuthSettings(domain="a.test/x", type="bearer", token_env="T"), "domain"),
        (lambda: AuthSettings(domain="a.test", type="form", username_env="U"), "login_url"),
        (lambda: RevisitRule(), "url"),
        (lambda: RevisitRule(url="re:("), "url"),
        (lambda: RevisitRule(url="*", min=5.0, max=1.0), "min"),
    ],
    ids=["auth-secret", "auth-domain", "auth-login", "rule-empty", "rule-regex", "rule-bounds"],
)
def test_nested_models_raise_settings_error_naming_the_field(make: Any, field: str) -> None:
    with pytest.raises(InvalidSetting) as info:
        make()
    assert info.value.field == field, info.value


def test_run_raises_settings_error_for_a_bad_resolve(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(SettingsError, match=r"invalid setting 'resolve': .*'nonsense'"):
        gossamer.run(SEED, resolve=["nonsense"], out=str(out), quiet=True)
    assert not out.exists()
