"""Credentials kept out of every output: URLs and DSNs shown or stored without passwords.

Any scheme counts (``redis://``, ``rediss://``, ``postgres://``, ``http://user:pw@proxy`` ...):
the password of a URL's user info, and any ``...password=`` parameter (libpq's ``password``
and ``sslpassword``, in a query string or a ``key=value`` DSN), is a credential. The user name
before a password stays (``redis://user:***@host/0``; ``postgres://user@host/db?password=***``),
so a message still says who connected; a user name alone, or before an empty password, is
masked whole (``https://***@host/``): many services take a token there
(``https://TOKEN@host/``, ``http://APIKEY:@proxy/``), and a URL does not say which it holds;
a stored DSN or proxy (:func:`strip_password`) keeps no user name before an empty password.
An ``@`` past the end of the authority (``https://host/@name``, ``?to=a@b.test``) is the
path's or the query's.
"""

from __future__ import annotations

import re

MASK = "***"

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s'\"<>]*)@")
"""A URL's scheme and user info: up to the last ``@`` before a space or a quote (an
unescaped ``/`` or ``@`` in a password stays inside it)."""
_AUTHORITY_END = re.compile(r"[/?#\\]")
"""Where an authority ends (WHATWG: ``\\`` too, in the special schemes)."""
_PARAM = re.compile(
    r"(?i)(?P<lead>^|[?&;\s])(?P<key>[\w.-]*password)\s*=\s*"
    r"(?P<value>'(?:[^'\\]|\\.)*'?|[^&#;\s]*)"
)
"""A ``...password=`` parameter; a libpq value may be quoted (``password='a b'``)."""
_MASKED_USER = re.compile(r"\*\*\*\.[0-9a-f]{8}")
"""A user name alone as the frontier keeps it (:func:`mask_user_alone`)."""
_URL_REST = re.compile(r"[^\s'\"<>]*")
"""The rest of a URL in a text: up to a space or a quote."""


def redact_text(text: str) -> str:
    """``text`` (a URL, a message, an exception's text) with every password masked.

    Each pattern is tried only on a text that may hold it (a crawl keeping text redacts every
    page's URL, some 60 characters, where the two searches cost 5 us): user info needs an
    ``@``, a parameter the word ``password``, which the case-blind search finds only where
    ``casefold`` makes that word of it (checked over all of Unicode: the long s, U+017F, is
    an ``s`` to both)."""
    if "@" in text:
        text = _USERINFO.sub(_mask_userinfo, text)
    if "password" in text.casefold():
        text = _PARAM.sub(lambda m: f"{m['lead']}{m['key']}={MASK}", text)
    return text


def redact_url(url: str) -> str:
    """``url`` with its password shown as ``***`` (``redis://user:***@host/0``): for output."""
    return redact_text(url)


def strip_password(url: str) -> str:
    """``url`` without its password at all (``postgres://user@host/db``): for storing a DSN
    whose reader supplies the password itself (``PGPASSWORD``, ``~/.pgpass``, its own flag).
    """
    url = _USERINFO.sub(_drop_password, url, count=1)
    url = _PARAM.sub(lambda m: "" if m["lead"] in ("&", ";") else m["lead"], url)
    return url.replace("?&", "?").rstrip("?&")


def strip_userinfo(url: str) -> str:
    """``url`` without its user name and password (``http://host/path``): the URI a request
    names (a WARC record's target), whose credentials travel in a header."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if not sep or "@" not in authority:
        return url
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


def redact_authority(url: str) -> str:
    """``url``, a URL as parsed (canonical: a ``/`` or ``@`` in its user info escaped), with
    its user info masked as :func:`redact_url` masks it, looked for in its authority only:
    its path, query and fragment, which may hold an ``@`` of their own, are left alone. For
    the URLs a crawl stores and shows (records, crawl.db, the shared focus stream)."""
    if "@" not in url:
        return url
    scheme, sep, rest = url.partition("://")
    end = _AUTHORITY_END.search(rest)
    authority, tail = (rest, "") if end is None else (rest[: end.start()], rest[end.start() :])
    if not sep or "@" not in authority:
        return url
    return redact_url(f"{scheme}://{authority}") + tail


def mask_user_alone(authority: str) -> str:
    """``user@host[:port]``, a seed's user name given alone (a token, maybe), as the crawl's
    frontier keeps it in the URLs it queues (crawl.db's ``urls`` table, a Redis job's entries):
    ``***.`` and eight hex digits of the authority's digest for the user name
    (``***.5d41402a@host``), so that seeds of one origin with tokens of their own stay apart,
    each URL fetched with its own seed's token. Records and messages show ``***@host``."""
    import hashlib  # here: its OpenSSL start costs a parse worker 12 M instructions otherwise

    tag = hashlib.blake2b(authority.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{MASK}.{tag}@{authority.rpartition('@')[2]}"


def is_masked_user(user: str) -> bool:
    """Whether ``user`` is a user name alone as :func:`mask_user_alone` masks it."""
    return _MASKED_USER.fullmatch(user) is not None


def has_password(url: str) -> bool:
    """True when ``url`` holds a password (a user name alone is no password, though shown
    masked)."""
    if "password" in url.casefold() and _PARAM.search(url):
        return True
    return any(":" in match["userinfo"] for match in _USERINFO.finditer(url))


def _user_before_password(userinfo: str) -> str | None:
    """The user name of ``userinfo`` to show before a masked password, else None. A user name
    with an ``@`` in it is none: its user info may end there, the colon after it being a
    port's or a path's (``TOKEN@host:8080/@me``), so it is masked as a user name alone; so is
    one before an empty password (``TOKEN:@host``, as ``curl -u TOKEN:`` sends a token)."""
    user, colon, password = userinfo.partition(":")
    return user if colon and password and "@" not in user else None


def _mask_userinfo(match: re.Match[str]) -> str:
    userinfo = match["userinfo"]
    user = _user_before_password(userinfo)
    if user is not None:
        return f"{match['scheme']}{user}:{MASK}@"
    end = _AUTHORITY_END.search(userinfo)
    if end is not None:  # the @ is past the authority: user info only before an @ in it
        userinfo = userinfo[: end.start()].rpartition("@")[0]
    if not userinfo or _names_a_password(match.string, match.end()):
        return match[0]  # no user info, or a user name whose password is a parameter
    return f"{match['scheme']}{MASK}{match['userinfo'][len(userinfo) :]}@"


def _names_a_password(text: str, start: int) -> bool:
    """Whether the URL going on at ``start`` of ``text`` has a ``...password=`` parameter."""
    rest = _URL_REST.match(text, start)
    return rest is not None and "password" in rest[0].casefold() and bool(_PARAM.search(rest[0]))


def _drop_password(match: re.Match[str]) -> str:
    user, colon, password = match["userinfo"].partition(":")
    if colon and not password:
        return match["scheme"]  # a user name before an empty password: a token, maybe
    return f"{match['scheme']}{user}@" if user else match["scheme"]
