"""The host name of a request's URL, remembered per host, is the one `urlsplit` gives."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from gossamer.fetch.hostnames import HostNames

URLS = [
    "http://example.com/a/b?q=1",
    "http://Example.COM:8080/",
    "https://user:pw@host.test:443/x",
    "http://a@b@c.test/",
    "http://[::1]:8080/path",
    "http://[fe80::1%25eth0]/",
    "http://127.0.0.1/",
    "http://xn--bcher-kva.example/",
    "http://bücher.example/",
    "http://host.test?q=/x",
    "http://host.test#frag/x",
    "http://host.test#f@evil.test/",
    "http://host.test",
    "http://host.test.:80/",
    "http:/\t/tabbed.test/x",
    "http://new\nline.test/",
    " http://spaced.test/",
    "\x01http://control.test/",
    "http:foo/bar",
    "mailto:someone@example.com",
    "//scheme-relative.test/x",
    "http://[::1/",
    "http://[bad]/",
    "",
    "/just/a/path",
]


def _expected(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


@pytest.mark.parametrize("url", URLS)
def test_the_host_name_is_urlsplits(url: str) -> None:
    names = HostNames()
    assert names(url) == _expected(url)
    assert names(url) == _expected(url)  # remembered


def test_urls_of_one_host_share_one_parse() -> None:
    names = HostNames()
    for n in range(100):
        assert names(f"http://user@Host.test:81/page/{n}?q={n}") == "host.test"
    assert len(names._names) == 1
