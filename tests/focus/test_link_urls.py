"""A link's host, path and query as the link features read them: ``urlsplit``'s, by a faster
path for plain URLs."""

from urllib.parse import urlsplit

import pytest

from gossamer.focus.linkfeatures import _host_path_query


@pytest.mark.parametrize(
    "url",
    [
        "http://docs.test:8391/library/smtplib.html",
        "https://a.test",
        "http://a.test?x=1",
        "http://a.test:/p",
        "http://a.test/p?q?r",
        "https://a.test/%20x/@y",
        "http://u@a.test/x",
        "http://A.test/x",
        "http://[::1]:80/x",
        "http://a.test/p#f",
        " http://a.test/",
        "http://a.test/a\tb",
        "HTTP://a.test/",
        "http://a.test/é",
    ],
)
def test_host_path_query_is_urlsplits(url: str) -> None:
    parts = urlsplit(url)
    assert _host_path_query(url) == (parts.hostname or "", parts.path, parts.query)
