"""The page store's DSN given as libpq's ``key=value`` connection string
(``host=db port=5432 user=crawler password=secret dbname=pages``), read into the URL form
(``postgresql://crawler:secret@db:5432/pages``) where it comes in.

From then on the store is one kind of value: asyncpg connects to it, and what keeps a URL's
password out of every output keeps this one's out too: messages and logs show it masked
(:mod:`gossamer.redact`), a cluster job stores it without its password and a user name given
alone in its ``credentials`` key (:mod:`gossamer.cluster.jobusers`), crawl.db names it
without its password.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

__all__ = ["is_conninfo", "store_url"]

_URL_KEYS = ("user", "password", "host", "port", "dbname")
"""The keys the URL's user info, host, port and path hold; any other goes in its query."""


def is_conninfo(value: str) -> bool:
    """Whether ``value`` is a ``key=value`` connection string rather than a URL (libpq's own
    rule: a URL starts with its scheme)."""
    return "=" in value and not value.lstrip().startswith(("postgres://", "postgresql://"))


def store_url(value: str) -> str:
    """``value`` in the URL form: a ``key=value`` string read as libpq reads one (values
    bare, or quoted in ``'...'``; a backslash escapes the next character), anything else as
    it is. Raises ValueError, naming no value, for a string libpq would refuse too."""
    if not is_conninfo(value):
        return value
    pairs = _pairs(value)
    given = dict(pairs)
    user = quote(given.get("user", ""), safe="")
    password = given.get("password")
    userinfo = user + ("" if password is None else ":" + quote(password, safe=""))
    host, port = given.get("host", ""), given.get("port", "")
    # One host name or address (not a socket's directory, not a list) goes in the authority.
    plain = bool(host) and not host.startswith("/") and "," not in host
    in_netloc = plain and (not port or port.isdigit())
    netloc = ""
    if in_netloc:
        netloc = f"[{host}]" if ":" in host else quote(host, safe="")
        netloc += f":{port}" if port else ""
    netloc = f"{userinfo}@{netloc}" if userinfo else netloc
    path = "/" + quote(given["dbname"], safe="") if "dbname" in given else ""
    rest = [(k, v) for k, v in pairs if k not in _URL_KEYS]
    if not in_netloc:
        rest = [(k, given[k]) for k in ("host", "port") if given.get(k)] + rest
    query = urlencode(rest, quote_via=quote)
    return f"postgresql://{netloc}{path or '/'}" + (f"?{query}" if query else "")


def _pairs(text: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` pairs of a connection string, the last of a repeated key kept."""
    pairs: dict[str, str] = {}
    at = 0
    while True:
        at = _skip_spaces(text, at)
        if at == len(text):
            return list(pairs.items())
        equals = text.find("=", at)
        key = text[at:equals].strip() if equals >= 0 else ""
        if not key or any(c.isspace() for c in key):
            raise ValueError("a key=value connection string wants key=value pairs")
        value, at = _value(text, _skip_spaces(text, equals + 1))
        pairs.pop(key, None)
        pairs[key] = value


def _value(text: str, at: int) -> tuple[str, int]:
    """The value starting at ``at`` and where it ends."""
    quoted = text.startswith("'", at)
    at += quoted
    out = []
    while at < len(text):
        char = text[at]
        if char == "\\" and at + 1 < len(text):
            out.append(text[at + 1])
            at += 2
            continue
        if (quoted and char == "'") or (not quoted and char.isspace()):
            return "".join(out), at + quoted
        out.append(char)
        at += 1
    if quoted:
        raise ValueError("a quoted value of the connection string has no closing quote")
    return "".join(out), at


def _skip_spaces(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at
