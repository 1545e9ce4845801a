"""The host name of a request's URL, parsed once per host rather than once per request and
per concern (the proxy pool's pick, the login of the host)."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["HostNames"]

_LIMIT = 4096
"""Host names remembered at most (all forgotten when one more comes)."""


class HostNames:
    """``urlsplit(url).hostname`` (lower case, without brackets, port or user info; ""
    when the URL has none or does not parse), remembered by the URL's start up to its path,
    which fixes the host: a crawl requests the same hosts again and again, and a lease's
    URL starts with its host key. A URL with a tab, a newline or a leading control character
    or space (which `urlsplit` removes first) is parsed each time."""

    __slots__ = ("_names",)

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def __call__(self, url: str) -> str:
        if url[:1] <= " " or "\t" in url or "\n" in url or "\r" in url:
            return _hostname(url)
        end = url.find("/", url.find("//") + 2)
        start = url if end < 0 else url[:end]
        names = self._names
        name = names.get(start)
        if name is None:
            if len(names) >= _LIMIT:
                names.clear()
            name = names[start] = _hostname(start)
        return name


def _hostname(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""
