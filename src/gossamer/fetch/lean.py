"""The lean HTTP/1.1 client: direct GETs over http:// and https:// on pooled keep-alive
connections (`gossamer.fetch.wire`), what `Fetcher` uses unless a proxy or the setting
``http_client = "aiohttp"`` says otherwise.

A connection is made to an address the resolver gave (the `CachingResolver`, through the
address guard's `GuardedResolver` when there is one: every new connection is judged on the
address it really uses), tried in the order given; an IP literal is connected to as it is
(the fetcher's guard has judged it). TLS verifies with the fetcher's context, the server
name being the URL's host. Idle connections are kept per (scheme, host, port) for
``keepalive_timeout`` seconds, at most ``limit`` of them in all (`idle_limit`: one for each
host a polite crawl has in rotation); the newest of a host's is reused first, the oldest of
all dropped first when the pool is full. A request sent on a kept connection that the server
had closed meanwhile is sent once more on a new connection, if nothing of its answer came; a
connection whose body was not read to its end is closed, never reused.

The request goes out as aiohttp would write it (the same header order: ``Host``, the
session headers with per-request ones replacing those of the same name, then the other
per-request ones, then aiohttp's ``Accept`` and ``Accept-Encoding`` where none of those named
them), so a `--warc` archive does not tell the clients apart.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import re
import resource
import socket
import ssl
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol
from urllib.parse import quote, unquote, urlsplit

from gossamer.eventloop import Loop
from gossamer.fetch.exchange import Exchange, masked
from gossamer.fetch.headers import raw_header_map
from gossamer.fetch.wire import Connection, WireError
from gossamer.urls import is_plainly_canonical

__all__ = ["Answer", "LeanClient", "LeanResponse", "Probe", "Resolve", "idle_limit"]

Resolve = Callable[[str, int, socket.AddressFamily], Awaitable[list[Any]]]
"""A resolver's ``resolve(host, port, family)`` (`CachingResolver`, `GuardedResolver`)."""
_Key = tuple[str, str, int]
_PORTS = {"http": 80, "https": 443}
_SITES = 4096
"""Origins whose parts are remembered (forgotten all at once when full)."""
_TARGET_SAFE = "!#$%&'()*+,/:;=?@[]~"
"""Characters a request target keeps as they are (the rest of printable ASCII too)."""
_AUTO = (("Accept", "*/*"), ("Accept-Encoding", "gzip, deflate, br, zstd"))
"""The headers aiohttp sends when neither the session's nor the request's name them (the
codings: those both clients decode)."""
_FORBIDDEN = re.compile("[\r\n\x00]")
"""What a header sent must not hold (a line break splits the head; aiohttp refuses NUL)."""
_IDLE_PER_REQUEST = 32
"""Idle connections kept per request in flight, at most. A polite crawl has more hosts in
rotation than requests in flight (each host waits its delay between pages), about
``concurrency x keep-alive time / page time`` of them worth keeping (15 s / 0.5 s: 30); an
idle connection costs 7 KiB, or 53 KiB with TLS (uvloop; 306 KiB on asyncio's loop)."""
_ASYNCIO_IDLE = 256
"""Idle connections kept on asyncio's own loop, at most: its TLS transport holds a 256 KiB
buffer for the connection's life (an idle one costs 306 KiB: 256 of them some 77 MB)."""


def idle_limit(concurrency: int, nofile: int | None = None, *, loop: Loop = "uvloop") -> int:
    """How many idle connections a client with ``concurrency`` requests in flight keeps:
    `_IDLE_PER_REQUEST` per request, within half the soft limit of open files (``nofile``, the
    process's ``RLIMIT_NOFILE`` by default) less the connections in flight, the other half
    left to everything else the crawl opens (output, WARC, DNS, Redis, the rules' and
    renderer's pipes); at least one. On asyncio's own ``loop``, `_ASYNCIO_IDLE` at most."""
    wanted = _IDLE_PER_REQUEST * concurrency
    if loop == "asyncio":
        wanted = min(wanted, _ASYNCIO_IDLE)
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if nofile == resource.RLIM_INFINITY:
            return wanted
    return max(1, min(wanted, nofile // 2 - concurrency))


class Probe:
    """One request's times: when `Fetcher._fetch` began it, then when its client started to
    send it (its connection made: DNS, connect and TLS done), and when its answer began."""

    __slots__ = ("answered_at", "clock", "started_at")

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.started_at = clock()
        self.answered_at: float | None = None

    def stamp(self) -> None:
        """The request starts to be sent now."""
        self.started_at = self.clock()


class Answer(Protocol):
    """A response whose head has come, as `Fetcher` reads it (`LeanResponse`, or aiohttp's
    behind `gossamer.fetch.sending.AiohttpAnswer`)."""

    @property
    def status(self) -> int:
        """The status code."""

    def header(self, name: bytes) -> str | None:
        """The first value of the header ``name`` (lower case), or None."""

    def headers(self) -> Mapping[str, str]:
        """The headers as `gossamer.fetch.headers.header_map` gives them."""

    async def readany(self) -> bytes:
        """The next body bytes (de-chunked, not decoded); ``b""`` at the end."""

    def close(self) -> None:
        """Stop reading: the connection closes."""

    def exchange(self, body: bytes, cut: str | None) -> Exchange:
        """The exchange as sent and received, whose wire body was ``body``."""


class LeanResponse:
    """A response whose head has come; `read` its body, then `release` it."""

    __slots__ = ("_client", "_conn", "_key", "method", "request_headers", "target")

    def __init__(
        self,
        client: LeanClient,
        key: _Key,
        conn: Connection,
        target: str,
        request_headers: tuple[tuple[str, str], ...],
    ) -> None:
        self._client = client
        self._key = key
        self._conn = conn
        self.method = "GET"
        self.target = target
        self.request_headers = request_headers

    @property
    def status(self) -> int:
        """The status code."""
        return self._conn.status

    @property
    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """The response headers as received, in order."""
        return self._conn.raw_headers

    def header(self, name: bytes) -> str | None:
        """The first value of the header ``name`` (lower case), or None."""
        conn = self._conn
        try:
            found = conn.raw_headers[conn.names.index(name)][1]
        except ValueError:
            return None
        return found.decode("utf-8", "surrogateescape")

    def headers(self) -> Mapping[str, str]:
        """The headers as `gossamer.fetch.headers.header_map` gives them."""
        return raw_header_map(self._conn.raw_headers, self._conn.names)

    async def readany(self) -> bytes:
        """The next body bytes (de-chunked, not decoded); ``b""`` at the end."""
        return await self._conn.read()

    def close(self) -> None:
        """Stop reading: the connection closes (the rest of the body is never read)."""
        self._conn.close()

    def release(self) -> None:
        """Done with the response: its connection goes back to the pool, if clean."""
        self._client.release(self._key, self._conn)

    def exchange(self, body: bytes, cut: str | None) -> Exchange:
        """The exchange as sent and received, whose wire body was ``body``."""
        conn = self._conn
        return Exchange(
            method=self.method,
            target=self.target,
            request_headers=masked(self.request_headers),
            version=conn.version,
            status=conn.status,
            reason=conn.reason,
            response_headers=tuple(conn.raw_headers),
            body=body,
            peer=conn.peer,
            cut=cut,
        )


class LeanClient:
    """Pooled keep-alive HTTP/1.1 connections (see the module doc)."""

    def __init__(
        self,
        resolve: Resolve,
        *,
        headers: Mapping[str, str],
        ssl_context: ssl.SSLContext,
        connect_timeout: float,
        read_timeout: float,
        total_timeout: float,
        keepalive_timeout: float,
        limit: int,
    ) -> None:
        self._resolve = resolve
        self._headers = dict(headers)
        self._defaults = _with_auto(tuple(self._headers.items()))
        self._block = _encode("", self._defaults)[len("GET  HTTP/1.1\r\n") :]
        """The default headers' lines and the blank line that ends a head."""
        self._own_host = _names_host(self._headers)
        """Whether the default headers carry a ``Host`` of their own (it replaces the URL's)."""
        self._sites: dict[str, tuple[_Key, str, str | None]] = {}
        """Per origin (``scheme://host:port`` as written): the pool key, the ``Host``
        header and the ``Authorization`` of its user info."""
        self._ssl = ssl_context
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._total_timeout = total_timeout
        self._keepalive = keepalive_timeout
        self._limit = max(1, limit)
        self._idle: dict[_Key, deque[Connection]] = {}
        """Per key, its idle connections, the newest last; a key with none is removed."""
        self._order: OrderedDict[Connection, _Key] = OrderedDict()
        """Every idle connection and its key, in the order released: the oldest first (its
        ``idle_since`` the smallest)."""
        self._swept = 0.0

    async def get(
        self, url: str, headers: Mapping[str, str] | None, on_sending: Callable[[], None]
    ) -> LeanResponse:
        """GET ``url`` and wait for its head; raises `WireError` (``on_sending`` is called
        when the request is handed to a connection)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._total_timeout
        key, target, request_headers, request = self._request(url, headers)
        for attempt in (0, 1):
            conn = self._pooled(key, loop.time()) if attempt == 0 else None
            fresh = conn is None
            if conn is None:
                conn = await self._connect(key, deadline, loop)
            on_sending()
            try:
                conn.start(request, deadline)
                await conn.head()
            except WireError as exc:
                conn.finish()
                if fresh or conn.received or exc.reason in ("timeout", "read-timeout"):
                    raise
                continue  # a kept connection the server had closed: once more, fresh
            except BaseException:
                conn.finish()
                raise
            return LeanResponse(self, key, conn, target, request_headers)
        raise AssertionError("unreachable")  # pragma: no cover

    def release(self, key: _Key, conn: Connection) -> None:
        """Take ``conn`` back after its response (closed instead unless clean)."""
        if not conn.finish():
            return
        if len(self._order) >= self._limit:
            self._drop_oldest()
        conns = self._idle.get(key)
        if conns is None:
            conns = self._idle[key] = deque()
        conns.append(conn)
        self._order[conn] = key
        now = conn.idle_since
        if now - self._swept > self._keepalive:
            self._sweep(now)

    def close(self) -> None:
        """Close every idle connection."""
        for conn in self._order:
            conn.close()
        self._idle.clear()
        self._order.clear()

    def _request(
        self, url: str, headers: Mapping[str, str] | None
    ) -> tuple[_Key, str, tuple[tuple[str, str], ...], bytes]:
        """The pool key, request target, headers and encoded head of ``url``'s request."""
        if not is_plainly_canonical(url):
            key, host, target, auth = _parse(url)
        else:  # the common case: the origin's parts known already, the target as it is
            end = _origin_end(url)
            origin = url[:end]
            site = self._sites.get(origin)
            if site is None:
                if len(self._sites) >= _SITES:
                    self._sites.clear()
                key, host, _, auth = _parse(url)
                site = self._sites[origin] = (key, host, auth)
            key, host, auth = site
            target = url[end:].partition("#")[0] or "/"
            if target[0] != "/":
                target = "/" + target
        if not headers and auth is None and not self._own_host:
            sent = (("Host", host), *self._defaults)
            head = f"GET {target} HTTP/1.1\r\nHost: {host}\r\n".encode() + self._block
            return key, target, sent, head
        merged = dict(self._headers)
        if auth is not None:
            merged["Authorization"] = auth
        if headers:
            lower = {k.lower(): k for k in merged}
            for name, value in headers.items():
                known = lower.get(name.lower())
                if known is not None and known != name:
                    merged = {(name if k == known else k): v for k, v in merged.items()}
                    lower[name.lower()] = name
                merged[name] = value
        sent = _with_auto(_host_first(host, merged))
        return key, target, sent, _encode(target, sent)

    def _pooled(self, key: _Key, now: float) -> Connection | None:
        conns = self._idle.get(key)
        while conns:
            conn = conns.pop()
            del self._order[conn]
            if not conns:
                del self._idle[key]
            if conn.usable and now - conn.idle_since < self._keepalive:
                return conn
            conn.close()
        return None

    async def _connect(
        self, key: _Key, deadline: float, loop: asyncio.AbstractEventLoop
    ) -> Connection:
        scheme, host, port = key
        context = self._ssl if scheme == "https" else None
        addresses = await self._addresses(host, port, deadline, loop)
        error = WireError("connect-error", "no address")
        for family, address in addresses:
            try:
                return await self._open(family, address, port, context, host, deadline, loop)
            except WireError as exc:
                if exc.reason == "tls" or exc.reason == "timeout":
                    raise
                error = exc
        raise error

    async def _addresses(
        self, host: str, port: int, deadline: float, loop: asyncio.AbstractEventLoop
    ) -> list[tuple[int, str]]:
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            return [(socket.AF_INET if ip.version == 4 else socket.AF_INET6, host)]
        try:
            async with asyncio.timeout_at(deadline):
                results = await self._resolve(host, port, socket.AF_UNSPEC)
        except TimeoutError:
            raise WireError("timeout") from None
        except OSError as exc:
            from gossamer.fetch.guard import BlockedAddress

            if isinstance(exc, BlockedAddress):
                raise WireError("blocked-address", str(exc)) from None
            raise WireError("dns", str(exc)) from None
        return [(r["family"], r["host"]) for r in results]

    async def _open(
        self,
        family: int,
        address: str,
        port: int,
        context: ssl.SSLContext | None,
        host: str,
        deadline: float,
        loop: asyncio.AbstractEventLoop,
    ) -> Connection:
        read_timeout = self._read_timeout
        total = loop.time() + self._connect_timeout > deadline
        try:
            async with asyncio.timeout_at(min(deadline, loop.time() + self._connect_timeout)):
                _, conn = await loop.create_connection(
                    lambda: Connection(loop, read_timeout),
                    address,
                    port,
                    family=family,
                    ssl=context,
                    server_hostname=host if context is not None else None,
                )
        except TimeoutError:
            raise WireError("timeout" if total else "connect-timeout") from None
        except (ssl.SSLError, ssl.CertificateError) as exc:
            raise WireError("tls", str(exc)) from None
        except ConnectionRefusedError:
            raise WireError("connection-refused") from None
        except OSError as exc:
            raise WireError("connect-error", str(exc)) from None
        return conn

    def _drop_oldest(self) -> None:
        conn, key = self._order.popitem(last=False)
        self._forget(conn, key)

    def _sweep(self, now: float) -> None:
        """Close the connections idle for longer than the keep-alive time, or closed."""
        self._swept = now
        keepalive = self._keepalive
        for conn, key in [
            (conn, key)
            for conn, key in self._order.items()
            if not conn.usable or now - conn.idle_since >= keepalive
        ]:
            del self._order[conn]
            self._forget(conn, key)

    def _forget(self, conn: Connection, key: _Key) -> None:
        """Close ``conn``, taken out of `_order` already, and take it out of `_idle`."""
        conns = self._idle[key]
        if conns[0] is conn:  # the oldest of its key: always so when the oldest of all
            conns.popleft()
        else:
            conns.remove(conn)
        if not conns:
            del self._idle[key]
        conn.close()


def _origin_end(url: str) -> int:
    """Where ``url``'s origin (scheme and authority) ends."""
    start = url.find("//") + 2
    end = len(url)
    for sep in "/?#":
        found = url.find(sep, start)
        if 0 <= found < end:
            end = found
    return end


def _parse(url: str) -> tuple[_Key, str, str, str | None]:
    """The pool key, ``Host`` header, request target and ``Authorization`` (of the URL's
    user info, as aiohttp sends it) of ``url``; raises `WireError` for an invalid one."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise WireError("invalid-url", str(exc)) from None
    if scheme not in _PORTS or not host or _numeric_name(host):
        raise WireError("invalid-url", "not an http(s) URL with a host")
    default = _PORTS[scheme]
    port = default if port is None else port
    target = parts.path or "/"
    if parts.query:
        target = f"{target}?{parts.query}"
    target = quote(target, safe=_TARGET_SAFE)
    name = f"[{host}]" if ":" in host else host
    auth = None
    if parts.username is not None:
        auth = _basic(parts.username, parts.password or "")
    return (scheme, host, port), name if port == default else f"{name}:{port}", target, auth


def _numeric_name(host: str) -> bool:
    """A name that ends in a number but is no IPv4 address (``2130706433``), which
    yarl refuses: it is no host name."""
    last = host.rpartition(".")[2]
    if not last.isdigit() or ":" in host:
        return False
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return True
    return False


def _names_host(headers: Mapping[str, str]) -> bool:
    return any(name.lower() == "host" for name in headers)


def _host_first(host: str, headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``headers`` after a ``Host`` line: the one given replaces the URL's ``host``, as
    aiohttp sends it (two would let a server, or a proxy on the way, pick either)."""
    given = ("Host", host)
    rest = []
    for item in headers.items():
        if item[0].lower() == "host":
            given = item
        else:
            rest.append(item)
    return (given, *rest)


def _with_auto(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``headers`` and, after them, those of `_AUTO` they lack, as aiohttp adds them."""
    names = {name.lower() for name, _ in headers}
    return (*headers, *(item for item in _AUTO if item[0].lower() not in names))


def _basic(user: str, password: str) -> str:
    token = f"{unquote(user)}:{unquote(password)}".encode()
    return "Basic " + base64.b64encode(token).decode("ascii")


def _encode(target: str, headers: tuple[tuple[str, str], ...]) -> bytes:
    lines = [f"GET {target} HTTP/1.1"]
    for name, value in headers:
        if _FORBIDDEN.search(value) or _FORBIDDEN.search(name):
            raise WireError("client-error", f"a line break or NUL in the header {name[:64]!r}")
        lines.append(f"{name}: {value}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("utf-8")
