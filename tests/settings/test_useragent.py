"""The robots.txt product token a User-Agent names, and the crawl's token by default."""

from __future__ import annotations

import pytest

from gossamer.settings import load_settings
from gossamer.settings.useragent import DEFAULT_TOKEN, borrowed_name, product_token


@pytest.mark.parametrize(
    ("agent", "token"),
    [
        ("AcmeBot/2.0 (+https://acme.example/bot)", "AcmeBot"),
        ("gossamer/0.1.0", "gossamer"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"),
        ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0)", "bingbot"),
        ("my_crawler-2/1", "my_crawler-2"),
        ("AcmeBot", "AcmeBot"),
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36", None),
        ("Acme Bot 2.0", None),
        ("", None),
        ("x" * 100 + "/1", "x" * 64),
    ],
)
def test_the_product_token_of_a_user_agent(agent: str, token: str | None) -> None:
    assert product_token(agent) == (token or DEFAULT_TOKEN)


def test_the_crawl_goes_by_its_user_agent_unless_told_otherwise() -> None:
    assert load_settings({}, env={}).robots_name == "gossamer"
    agent = {"user_agent": "AcmeBot/2.0 (+https://acme.example/bot)"}
    assert load_settings(agent, env={}).robots_name == "AcmeBot"
    told = load_settings(agent | {"robots_token": "acme"}, env={})
    assert told.robots_name == "acme"


def test_a_user_agent_naming_a_well_known_crawler_is_told_apart() -> None:
    """Sites give Googlebot rights they give no one else: a crawl whose User-Agent names it
    takes them, and is warned so."""
    googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
    assert borrowed_name(googlebot, None) == "Googlebot"
    assert borrowed_name(googlebot, "acme") is None
    assert borrowed_name("AcmeBot/2.0", None) is None
    assert borrowed_name("AcmeBot/2.0", "bingbot") == "bingbot"
