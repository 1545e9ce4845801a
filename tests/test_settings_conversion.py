"""Settings as msgspec converts them: strings of the environment and TOML made booleans and
numbers as before, finite floats only, no unknown key at any depth, a cluster job's JSON
round trip, and a crawl that starts without pydantic."""

import hashlib
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from gossamer.cluster.jobs import job_json, parse_job
from gossamer.settings import (
    ClusterSettings,
    CrawlSettings,
    InvalidSetting,
    JobSettings,
    SettingsError,
    load_model,
    load_settings,
    setting_type,
    settings_from_json,
    settings_to_dict,
    settings_to_json,
    validate_model,
)

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("YES", True), ("On", True), ("1", True), ("t", True), ("y", True),
     ("false", False), ("no", False), ("OFF", False), ("0", False), ("F", False)],
)  # fmt: skip
def test_boolean_strings_from_the_environment(text: str, value: bool) -> None:
    settings = load_settings({}, env={"GOSSAMER_ROBOTS": text, "GOSSAMER_WARC": text})
    assert (settings.robots, settings.warc) == (value, value)


def test_a_boolean_that_is_no_boolean_names_its_field() -> None:
    with pytest.raises(SettingsError, match="'quiet'"):
        load_settings({}, env={"GOSSAMER_QUIET": "maybe"})
    with pytest.raises(SettingsError, match="'quiet'"):
        load_settings({"quiet": 2}, env={})


def test_number_strings_from_the_environment_and_toml(tmp_path: Path) -> None:
    env = {"GOSSAMER_CONCURRENCY": "12", "GOSSAMER_DELAY": "0.5", "GOSSAMER_MAX_PAGES": "7"}
    settings = load_settings({}, env=env)
    assert (settings.concurrency, settings.delay, settings.max_pages) == (12, 0.5, 7)
    config = tmp_path / "crawl.toml"
    config.write_text("per_host = 3.0\ndelay = 2\n")  # an integral float, an int for a float
    settings = load_settings({}, config=config, env={})
    assert (settings.per_host, settings.delay) == (3, 2.0)
    assert isinstance(settings.per_host, int) and isinstance(settings.delay, float)
    with pytest.raises(SettingsError, match="'concurrency'"):
        load_settings({}, env={"GOSSAMER_CONCURRENCY": "1.5"})
    with pytest.raises(SettingsError, match="'per_host'"):
        load_settings({}, env={"GOSSAMER_PER_HOST": "two"})
    with pytest.raises(SettingsError, match="'concurrency'"):
        load_settings({"concurrency": True}, env={})


FLOATS = [f.name for f in msgspec.structs.fields(JobSettings) if setting_type(f.type) is float]


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_every_float_setting_must_be_finite(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=f"'{name}': Input should be a finite number"):
        load_model(JobSettings, {}, env={f"GOSSAMER_{name.upper()}": value})
    with pytest.raises(SettingsError, match=f"'{name}': Input should be a finite number"):
        validate_model(JobSettings, {name: float(value)})
    with pytest.raises(SettingsError, match=f"'{name}': Input should be a finite number"):
        validate_model(JobSettings, {name: 10**400})


def test_float_settings_are_some() -> None:
    assert {"delay", "robots_retry", "heartbeat_ttl", "render_settle"} <= set(FLOATS)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"nope": 1}, "nope"),
        ({"auth": [{"domain": "a.test", "type": "bearer", "token_env": "T", "x": 1}]}, "auth.0.x"),
        ({"auth": [{"type": "bearer", "token_env": "T"}]}, "auth.0.domain"),
        ({"auth": [{"domain": "a.test", "type": "digest"}]}, "auth.0.type"),
        ({"auth": [{"domain": "a.test/x", "type": "bearer", "token_env": "T"}]}, "auth.0.domain"),
        ({"auth": [{"domain": "a.test", "type": "bearer"}]}, "auth.0.token_env"),
        ({"allow_ports": [80, 0]}, "allow_ports.1"),
        ({"shipped_rules": {"documents": [], "digest": "ab\n"}}, "shipped_rules.digest"),
        ({"shipped_rules": {"documents": [{"name": "a"}], "digest": "0" * 64}},
         "shipped_rules.documents.0.text"),
        ({"rule_functions": {"f": 3}}, "rule_functions"),
        ({"out": 3}, "out"),
    ],
)  # fmt: skip
def test_errors_name_the_field_at_every_depth(values: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidSetting) as info:
        validate_model(JobSettings, values)
    assert info.value.field == field, info.value
    assert str(info.value).startswith(f"invalid setting '{field}': ")


def test_unknown_keys_of_a_config_file_are_errors(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text('[crawl]\nseeds = ["http://a.test/"]\ncuncurrency = 3\n')
    with pytest.raises(SettingsError, match="'cuncurrency': not a setting"):
        load_settings({}, config=config, env={})
    config.write_text('[[auth]]\ndomain = "a.test"\ntype = "bearer"\ntoken = "secret"\n')
    with pytest.raises(SettingsError, match=r"'auth\.0\.token': not a setting"):
        load_settings({}, config=config, env={})


def test_the_cluster_settings_of_a_job_are_the_cluster_models() -> None:
    job = {f.name: f for f in msgspec.structs.fields(JobSettings)}
    for field in msgspec.structs.fields(ClusterSettings):
        assert job[field.name] == field
    crawl = {f.name for f in msgspec.structs.fields(CrawlSettings)}
    assert set(job) == crawl | set(ClusterSettings.__struct_fields__)


def _full_job(tmp_path: Path) -> JobSettings:
    documents = [{"name": "a.toml", "text": "x = 1\n"}, {"name": "b.json", "text": "{}"}]
    return validate_model(
        JobSettings,
        {
            "seeds": ["http://a.test/"],
            "seeds_file": str(tmp_path / "seeds.txt"),
            "out": tmp_path / "out",
            "allow_ports": "8080, 8081",
            "rule_functions": "clean=mod:clean, other=pkg.mod:f",
            "render_url": "/app/\\d{1,3},x",
            "render_block": ["image"],
            "render_browser": "/opt/chromium",
            "shipped_rules": {"documents": documents, "digest": hashlib.sha256().hexdigest()},
            "auth": [
                {"domain": "A.Test.", "type": "basic", "username_env": "U",
                 "password_file": str(tmp_path / "pw")},
                {"domain": "b.test", "type": "oauth2", "token_url": "https://b.test/t",
                 "client_id_env": "C", "client_secret_env": "S", "logged_out_status": [401]},
            ],
            "focus_phrase": "bread",
            "focus_mode": "hard",
            "max_bandwidth": 4096,
            "partitions": 8,
            "allocator": "weighted",
        },
    )  # fmt: skip


def test_a_job_survives_its_json_round_trip(tmp_path: Path) -> None:
    job = _full_job(tmp_path)
    assert job.auth[0].domain == "a.test" and job.allow_ports == [8080, 8081]
    assert job.rule_functions == {"clean": "mod:clean", "other": "pkg.mod:f"}
    assert job.render_url == ["/app/\\d{1,3},x"]
    stored = settings_to_json(job)
    again = parse_job(job_json(job), "j")
    assert again == job
    assert again.out == tmp_path / "out" and isinstance(again.auth[1].token_url, str)
    assert again.shipped_rules is not None and again.shipped_rules.documents[1].name == "b.json"
    assert validate_model(JobSettings, settings_to_dict(job)) == job
    assert settings_from_json(JobSettings, stored.encode()) == job


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ("{", "settings: Input data was truncated"),
        ('{"a": nan}', "settings: JSON is malformed"),
        ("[1, 2]", "settings: not a JSON object"),
        ('{"delay": 1e999}', "settings: Number out of range"),
        ('{"delay": "inf"}', "delay: Input should be a finite number"),
        ('{"out": 3}', "out"),
        ('{"auth": [{"domain": 3, "type": "basic"}]}', "auth.0.domain"),
        ('{"shipped_rules": {"documents": "x", "digest": ""}}', "shipped_rules.documents"),
        ('{"partitions": 0}', "partitions"),
        ('{"unknown": 0}', "unknown"),
    ],
)
def test_a_hostile_stored_job_is_one_clear_error(raw: str, where: str) -> None:
    with pytest.raises(SettingsError, match=f"^stored job 'j' is malformed: {where}"):
        parse_job(raw, "j")


def test_a_crawl_starts_without_pydantic(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from gossamer.cli import main\n"
        f"code = main(['crawl', 'http://127.0.0.1:9/', '--out', {str(tmp_path)!r}, '--quiet',"
        " '--max-retries', '0', '--no-robots'])\n"
        "print(code, sorted(m for m in sys.modules if m.partition('.')[0].startswith('pydantic')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.stdout.strip() == "0 []", (done.stdout, done.stderr)
