"""The user names a job's proxies and page store give alone, kept out of the stored job.

The stored job (``gs:{J}:job``) holds no password: ``cluster submit`` strips a proxy's or the
store's, and each worker brings its own (see :func:`gossamer.cluster.jobs.job_settings`). A
user name given alone (``http://TOKEN@proxy:3128/``, ``postgresql://TOKEN@db/pages``, or
before an empty password: ``http://TOKEN:@proxy:3128/``) is no password to strip: the
workers connect as it (the store's password, if any, from ``PGPASSWORD`` or a passfile), yet
it may be a token. The job names it masked as a seed's is, ``http://***.TAG@proxy:3128/``
(:func:`~gossamer.redact.mask_user_alone`), and the job's ``credentials`` HASH
(:mod:`gossamer.frontier.redis.credentials`), the one key that holds the seeds' passwords,
maps ``scheme://***.TAG@host[:port]`` to ``scheme://TOKEN@host[:port]``. A worker puts it
back (:func:`reveal_users`) before it builds its proxy pool and its store, for those its own
``--proxy`` or ``--store`` do not replace. A user name before a password, or before a
``password=`` parameter, is a user name, not a token: the job keeps it, without the
password.

The proxy check URL (``--proxy-check-url http://user:secret@site/``) names the site's
credentials, not a proxy's: every worker checks its proxies with it as the submitter gave
it, and no worker brings its own. So its whole user info, a password too, is kept so
(:func:`hide_check_url`): the job names it ``http://***.TAG@site/`` and ``credentials``
holds ``http://user:secret@site``.
"""

from __future__ import annotations

import re

import msgspec

from gossamer.frontier.redis.credentials import Credentials, credentials_key
from gossamer.frontier.redis.scripts import RedisClient
from gossamer.redact import (
    has_password,
    is_masked_user,
    mask_user_alone,
    strip_password,
    strip_userinfo,
)
from gossamer.settings import JobSettings, SettingsError

__all__ = [
    "hide_check_url",
    "hide_user",
    "holds_password",
    "lone_users",
    "reveal_users",
    "store_users",
]

_AUTHORITY = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^/?#\\]*)")
"""A URL's scheme and authority (up to its path, query or fragment)."""


def hide_user(url: str) -> str:
    """``url`` as a job stores it: a user name given alone masked (``scheme://***.TAG@host``),
    a password and a ``password=`` parameter stripped (:func:`gossamer.redact.strip_password`)."""
    alone = _lone_user(url)
    if alone is None:
        return strip_password(url)
    scheme, authority = alone
    return scheme + mask_user_alone(authority) + url[len(scheme) + len(authority) :]


def hide_check_url(url: str) -> str:
    """The proxy check URL as a job stores it: its user info, whatever it holds, masked as a
    user name given alone is (``scheme://***.TAG@host/path``)."""
    match = _AUTHORITY.match(url)
    if match is None or "@" not in match["authority"] or _masked_user(url) is not None:
        return url
    return match["scheme"] + mask_user_alone(match["authority"]) + url[match.end() :]


def holds_password(url: str) -> bool:
    """Whether the job stores ``url`` without a password its workers must bring themselves
    (one that :func:`hide_user` strips, not a user name it keeps apart)."""
    return has_password(url) and _lone_user(url) is None


def lone_users(settings: JobSettings) -> dict[str, str]:
    """Masked authority -> authority of each user name the store or a proxy of ``settings``
    gives alone, and of the proxy check URL's user info, as :func:`store_users` keeps them."""
    found = {}
    for url in _urls(settings, store=True, proxies=True):
        alone = _lone_user(url)
        if alone is not None:
            scheme, authority = alone
            found[scheme + mask_user_alone(authority)] = scheme + authority
    check = settings.proxy_check_url
    match = None if check is None else _AUTHORITY.match(check)
    if match is not None and hide_check_url(match[0]) != match[0]:
        found[hide_check_url(match[0])] = match[0]
    return found


async def store_users(redis: RedisClient, job: str, users: dict[str, str]) -> None:
    """Keep ``users`` (:func:`lone_users`) in the job's ``credentials``."""
    if users:
        await Credentials(redis, job).store(users)


async def reveal_users(
    redis: RedisClient, job: str, settings: JobSettings, *, store: bool, proxies: bool
) -> JobSettings:
    """``settings`` (a stored job's) with the user names of its store (``store``) and its
    proxies (``proxies``) put back from the job's ``credentials``; a :class:`SettingsError`
    when one is missing there (the job's keys were cleared under it)."""
    check = settings.proxy_check_url
    urls = _urls(settings, store=store, proxies=proxies) + ([check] if check else [])
    masked = {head for url in urls if (head := _masked_user(url)) is not None}
    if not masked:
        return settings
    asked = sorted(masked)
    replies = await redis.hmget(credentials_key(job), asked)
    found = {m: _text(r) for m, r in zip(asked, replies, strict=True)}
    update: dict[str, object] = {}
    if store and settings.store is not None:
        update["store"] = _put_back(settings.store, found, "store", job)
    if proxies and settings.proxies:
        update["proxies"] = [_put_back(url, found, "proxy", job) for url in settings.proxies]
    if check is not None:
        update["proxy_check_url"] = _put_back(check, found, "proxy check URL", job)
    return msgspec.structs.replace(settings, **update)


def _urls(settings: JobSettings, *, store: bool, proxies: bool) -> list[str]:
    urls = [settings.store] if store and settings.store is not None else []
    return urls + (list(settings.proxies) if proxies else [])


def _lone_user(url: str) -> tuple[str, str] | None:
    """``("scheme://", "user@host[:port]")`` of ``url`` when its user info is a user name alone
    or before an empty password (``TOKEN:@``, as ``curl -u TOKEN:`` sends a token), and no
    ``password=`` parameter follows; else (or masked already) None."""
    match = _AUTHORITY.match(url)
    if match is None or "@" not in match["authority"] or has_password(strip_userinfo(url)):
        return None
    user, _, password = match["authority"].rpartition("@")[0].partition(":")
    if not user or password or is_masked_user(user):
        return None
    return match["scheme"], match["authority"]


def _masked_user(url: str) -> str | None:
    """``scheme://***.TAG@host[:port]`` of a URL whose user name is masked, else None."""
    match = _AUTHORITY.match(url)
    if match is None or not is_masked_user(match["authority"].rpartition("@")[0]):
        return None
    return match["scheme"] + match["authority"]


def _text(raw: bytes | str | None) -> str | None:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def _put_back(url: str, found: dict[str, str | None], what: str, job: str) -> str:
    """``url`` with its masked user name as ``found`` holds it."""
    head = _masked_user(url)
    if head is None:
        return url
    real = found.get(head)
    hide = hide_check_url if what == "proxy check URL" else hide_user
    if real is None or _masked_user(real) is not None or hide(real) != head:
        remedy = {"store": "give this worker --store", "proxy": "give this worker --proxy"}
        raise SettingsError(
            f"the job's {what} {head.partition('.')[0]}@{head.rpartition('@')[2]} names a user "
            f"kept in {credentials_key(job)}, which does not hold it: "
            + remedy.get(what, "submit the job again")
        )
    return real + url[len(head) :]
