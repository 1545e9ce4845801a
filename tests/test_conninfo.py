"""The page store given as libpq's ``key=value`` connection string is read into the URL form
where it comes in (`gossamer.settings.conninfo`), so a URL's rules (its password masked in
every output, stripped from a cluster job) hold for it too."""

from __future__ import annotations

import pytest

from gossamer.cluster.jobs import job_settings
from gossamer.redact import mask_user_alone
from gossamer.settings import JobSettings, SettingsError, load_settings
from gossamer.settings.conninfo import store_url

SECRET = "kv-S3cret"


@pytest.mark.parametrize(
    ("given", "url"),
    [
        (
            f"host=127.0.0.1 port=5432 user=u password={SECRET} dbname=d",
            f"postgresql://u:{SECRET}@127.0.0.1:5432/d",
        ),
        (
            "host = db user=crawler password='a b\\'c@/' dbname=pages table=t sslmode=require",
            "postgresql://crawler:a%20b%27c%40%2F@db/pages?table=t&sslmode=require",
        ),
        ("host=::1 dbname=d", "postgresql://[::1]/d"),
        ("host=/run/postgresql dbname=d", "postgresql:///d?host=%2Frun%2Fpostgresql"),
        ("host=a,b port=1,2 dbname=d", "postgresql:///d?host=a%2Cb&port=1%2C2"),
        ("dbname=d user=x user=y", "postgresql://y@/d"),  # the last of a key, as libpq
        ("postgres://u:p@h/d?table=t", "postgres://u:p@h/d?table=t"),  # a URL as it is
    ],
)
def test_a_key_value_string_is_read_as_libpq_reads_it(given: str, url: str) -> None:
    assert store_url(given) == url


@pytest.mark.parametrize("bad", ["host=db user", f"password='{SECRET}", "=x", "a b=c"])
def test_a_malformed_string_is_refused_naming_no_value(bad: str) -> None:
    with pytest.raises(SettingsError, match="invalid setting 'store'") as info:
        load_settings({"seeds": ["http://a.test/"], "store": bad}, env={})
    assert SECRET not in str(info.value)


def test_the_settings_hold_the_url_form_and_show_it_masked() -> None:
    given = f"host=db.test user=crawler password={SECRET} dbname=pages"
    settings = load_settings({"seeds": ["http://a.test/"]}, env={"GOSSAMER_STORE": given})
    assert settings.store == f"postgresql://crawler:{SECRET}@db.test/pages"
    assert SECRET not in repr(settings) and "postgresql://crawler:***@db.test/pages" in repr(
        settings
    )
    job = job_settings(JobSettings(seeds=["http://a.test/"], store=given), [])
    assert job.store == "postgresql://crawler@db.test/pages"  # the password: each worker's own
    alone = JobSettings(seeds=["http://a.test/"], store=f"host=db.test user={SECRET} dbname=p")
    masked = mask_user_alone(f"{SECRET}@db.test")
    assert job_settings(alone, []).store == f"postgresql://{masked}/p"  # kept in credentials


def test_a_store_that_is_neither_is_refused_with_a_readable_hint() -> None:
    """The hint names no user info, which the message's redaction would mask."""
    from gossamer.sinks.postgres import parse_store_url

    with pytest.raises(SettingsError) as info:
        parse_store_url("mysql://db/pages")
    assert "expected a postgres://host/database URL or a key=value connection string" in str(
        info.value
    )
