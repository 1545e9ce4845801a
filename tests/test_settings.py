"""Settings: TOML < environment < flags, and clear errors naming the field."""

import os
import threading
from pathlib import Path

import pytest

from gossamer.cli import build_parser, main
from gossamer.flags import settings_from_args
from gossamer.settings import (
    CrawlSettings,
    JobSettings,
    SettingsError,
    load_model,
    load_settings,
    read_seeds,
)


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


@pytest.mark.parametrize("userinfo", ["ghp_T0KEN", "ghp_T0KEN:"], ids=["alone", "empty-password"])
def test_a_bad_seed_s_token_stays_out_of_the_message(
    userinfo: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A seed's user name alone, or before an empty password (``TOKEN:@``, as ``curl -u
    TOKEN:`` sends it), may be a token: the message names the seed without it."""
    argv = ["crawl", f"http://{userinfo}@a.test:99999/", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "'seeds'" in err and "http://***@a.test:99999/" in err and "T0KEN" not in err


def test_malformed_flag_value_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["crawl", "--max-pages", "abc", "http://a.test/"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--max-pages" in err and err.count("\n") == 1


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_floats_must_be_finite_from_every_source(value: str, tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(f"max_crawl_delay = {value}\n")
    with pytest.raises(SettingsError, match=r"'max_crawl_delay': .*finite number"):
        load_settings({}, config=config, env={})
    with pytest.raises(SettingsError, match=r"'delay': .*finite number"):
        load_settings({}, env={"GOSSAMER_DELAY": value})
    with pytest.raises(SettingsError, match=r"'retry_backoff': .*finite number"):
        load_settings({"retry_backoff": float(value)}, env={})


def test_cli_rejects_a_nan_delay(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["crawl", "--delay", "nan", "http://a.test/", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == "gossamer: invalid setting 'delay': Input should be a finite number\n"


def test_new_settings_from_toml_env_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text("allow_ports = [8081]\nmax_crawl_delay = 5\n")
    settings = load_settings({}, config=config, env={})
    assert (settings.allow_ports, settings.max_crawl_delay) == ([8081], 5.0)
    assert load_settings({}, env={"GOSSAMER_ALLOW_PORTS": "81, 82"}).allow_ports == [81, 82]
    assert load_settings({}, env={}).max_crawl_delay == 60.0
    with pytest.raises(SettingsError, match=r"'allow_ports\.0'"):
        load_settings({"allow_ports": [0]}, env={})
    with pytest.raises(SettingsError, match="'max_crawl_delay'"):
        load_settings({"max_crawl_delay": 0}, env={})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("delay = 1\n[crawl]\nconcurrency = 2\nx = 3\n", r"keys outside \[crawl\] .*: delay$"),
        ("a = 1\nb = 2\n[crawl]\n[other]\n", r"keys outside \[crawl\] .*: a, b, other$"),
        ("delay = 1\n[crawler]\nconcurrency = 2\n", r"unknown table \[crawler\]"),
        ("crawl = 3\n", r"\[crawl\] must be a table"),
        ("[crawl]\ndelay = nan\n", "'delay': .*finite"),
    ],
)
def test_toml_never_ignores_a_key(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(text)
    with pytest.raises(SettingsError, match=message):
        load_settings({}, config=config, env={})


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        (
            '[host_page_budgets]\n"*.example.org" = 500\n"docs.example.com" = 5000\n',
            "host_page_budgets",
            {"*.example.org": 500, "docs.example.com": 5000},
        ),
        ('[rule_functions]\nslug = "mymod:slug"\n', "rule_functions", {"slug": "mymod:slug"}),
        ('[focus]\nphrase = "rivers"\n', "focus_phrase", "rivers"),
    ],
)
@pytest.mark.parametrize("crawl_table", [False, True])
def test_the_tables_the_guides_show(
    tmp_path: Path, text: str, field: str, value: object, crawl_table: bool
) -> None:
    # as the guides write them: top level (a table of settings, beside top-level keys) or
    # under [crawl]
    config = tmp_path / "crawl.toml"
    if crawl_table and field != "focus_phrase":
        text = text.replace("[", "[crawl.", 1)
    config.write_text("max_pages = 5\n" + text if not crawl_table else text)
    assert getattr(load_settings({}, config=config, env={}), field) == value


def test_revisit_tables_at_the_top_level(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(
        'recrawl = true\nmax_duration = 60\n[[revisit]]\nurl = "*/feed*"\nmin = 600\n'
        '[[revisit]]\ncontent_type = "application/pdf"\nmin = 604800\n'
    )
    rules = load_settings({}, config=config, env={}).revisit
    assert [(r.url, r.content_type, r.min) for r in rules] == [
        ("*/feed*", None, 600.0),
        (None, "application/pdf", 604800.0),
    ]


def test_toml_of_top_level_keys_only_or_crawl_only(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text("per-host = 3\n")
    assert load_settings({}, config=config, env={}).per_host == 3
    config.write_text("[crawl]\nper_host = 4\n")
    assert load_settings({}, config=config, env={}).per_host == 4


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xd8\xff\xe0 binary", "line 1 is not UTF-8 text"),
        (b"http://a.test/\nhttp://b.test/\x00\n", "line 2 is not text"),
        (b"http://a.test/\n" + b"x" * 70_000 + b"\n", "line 2 is longer than 64 KiB"),
    ],
)
def test_seeds_file_must_be_text(content: bytes, message: str, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(content)
    with pytest.raises(SettingsError, match=f"'seeds_file': {message}"):
        read_seeds(load_settings({"seeds_file": seeds}, env={}))


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/dev/zero", "line 1 is not text"),
        ("/nonexistent/seeds.txt", "No such file"),
        ("/", "Is a directory"),
    ],
)
def test_unreadable_seeds_files(
    path: str, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["crawl", "--seeds-file", path, "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"invalid setting 'seeds_file': {message}" in err
    assert err.count("\n") == 1


def test_seeds_file_lines_and_fifo(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"\xef\xbb\xbfhttp://a.test/\r\n\n  # comment\n  http://b.test/x  \n")
    assert read_seeds(load_settings({"seeds_file": seeds}, env={})) == [
        "http://a.test/",
        "http://b.test/x",
    ]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=("http://c.test/\n",))
    writer.start()
    assert read_seeds(load_settings({"seeds_file": fifo}, env={})) == ["http://c.test/"]
    writer.join()


def test_seeds_file_larger_than_a_read_block(tmp_path: Path) -> None:
    lines = [f"http://h{i}.test/{'p' * 40}/{i}".encode() for i in range(40_000)]
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"\n".join(lines))
    read = read_seeds(load_settings({"seeds_file": seeds}, env={}))
    assert read == [line.decode() for line in lines]
    lines[25_000] += b"\xff"
    seeds.write_bytes(b"\n".join(lines))
    with pytest.raises(SettingsError, match="line 25001 is not UTF-8 text"):
        read_seeds(load_settings({"seeds_file": seeds}, env={}))


def test_config_that_is_not_toml_text(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(SettingsError, match="is not UTF-8 text"):
        load_settings({}, config=config, env={})
    with pytest.raises(SettingsError, match="/dev/zero is larger than"):
        load_settings({}, config=Path("/dev/zero"), env={})
    with pytest.raises(SettingsError, match="cannot read"):
        load_settings({}, config=tmp_path, env={})


CLUSTER_FLAGS = ("--partitions", "--allocator", "--heartbeat-ttl", "--claim-timeout",
                 "--partition-by")  # fmt: skip


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_crawl_help_offers_no_cluster_flags(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(["crawl"], capsys)
    assert "--max-crawl-delay" in text
    assert not [flag for flag in CLUSTER_FLAGS if flag in text]


@pytest.mark.parametrize("command", ["submit", "up"])
def test_cluster_commands_offer_the_cluster_flags(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_of(["cluster", command], capsys)
    assert "cluster settings" in text and "--max-crawl-delay" in text
    assert [flag for flag in CLUSTER_FLAGS if flag in text] == list(CLUSTER_FLAGS)


def test_crawl_refuses_a_cluster_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["crawl", "--partitions", "8", "http://a.test/"])
    assert exited.value.code == 2
    assert "--partitions" in capsys.readouterr().err


def test_cluster_submit_takes_cluster_and_crawl_flags() -> None:
    argv = ["cluster", "submit", "--redis", "redis://127.0.0.1:1/0", "http://a.test/",
            "--partitions", "8", "--allocator", "weighted", "--heartbeat-ttl", "2",
            "--claim-timeout", "3", "--partition-by", "url", "--delay", "0.5"]  # fmt: skip
    args = build_parser().parse_args(argv)
    settings = settings_from_args(args, JobSettings, skip=("redis", "job"))
    assert (settings.partitions, settings.allocator, settings.partition_by) == (
        8,
        "weighted",
        "url",
    )
    assert (settings.heartbeat_ttl, settings.claim_timeout, settings.delay) == (2.0, 3.0, 0.5)
    assert settings.seeds == ["http://a.test/"]


@pytest.mark.parametrize(
    "text", ["partitions = 64\ndelay = 1\n", "[crawl]\npartitions = 64\ndelay = 1\n"]
)
def test_one_toml_file_serves_crawl_and_cluster(tmp_path: Path, text: str) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(text)
    job = load_model(JobSettings, config=config, env={})
    assert (job.partitions, job.delay) == (64, 1.0)
    crawl = load_settings({}, config=config, env={})
    assert crawl.delay == 1.0 and not hasattr(crawl, "partitions")
    config.write_text(text.replace("64", "0"))
    with pytest.raises(SettingsError, match="'partitions'"):
        load_settings({}, config=config, env={})  # checked, though a crawl does not use it


def test_cluster_settings_from_the_environment_reach_jobs_only() -> None:
    env = {"GOSSAMER_PARTITIONS": "16", "GOSSAMER_ALLOCATOR": "first-fit"}
    job = load_model(JobSettings, env=env)
    assert (job.partitions, job.allocator) == (16, "first-fit")
    assert not hasattr(load_settings({}, env=env), "allocator")


def test_rules_from_toml_env_and_repeated_flags(tmp_path: Path) -> None:
    config = tmp_path / "g.toml"
    config.write_text('[crawl]\nrules = ["rules/site.toml", "more"]\n')
    assert load_settings({}, config, env={}).rules == [Path("rules/site.toml"), Path("more")]
    from_env = load_settings({}, env={"GOSSAMER_RULES": "a.toml, b"})
    assert from_env.rules == [Path("a.toml"), Path("b")]
    args = build_parser().parse_args(["crawl", "--rules", "a.toml", "--rules", "dir"])
    assert settings_from_args(args, CrawlSettings).rules == [Path("a.toml"), Path("dir")]
