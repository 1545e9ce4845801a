"""Minimal HTTP/1.1 message types for the test server: a parsed request and a reply plan.

A handler never touches the socket. It returns a ``Reply`` describing what to send and
how to misbehave (delay, hang, drop, reset, raw framing); ``server.py`` carries it out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from http import HTTPStatus
from urllib.parse import parse_qsl, urlsplit

HTML = "text/html; charset=utf-8"
NO_BODY_STATUSES = frozenset({204, 304})


class BadRequest(Exception):
    """The request head could not be parsed."""


class Action(StrEnum):
    """What the server does with the connection for a reply."""

    RESPOND = "respond"  # send status, headers, body (and stream)
    HANG = "hang"  # send nothing, wait until the client or the server goes away
    DROP = "drop"  # close the connection without a response
    RESET = "reset"  # send the head and partial body, then abort with a TCP RST


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed request head. ``host`` is the lower-case Host name without its port."""

    method: str
    target: str
    version: str
    headers: Mapping[str, str]
    host: str

    @property
    def path(self) -> str:
        """The target's path, without the query."""
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> dict[str, str]:
        """Query parameters (last value wins)."""
        return dict(parse_qsl(self.target.partition("?")[2]))

    @property
    def keep_alive(self) -> bool:
        """Whether the connection stays open after this exchange."""
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection

    def accepts(self, coding: str) -> bool:
        """Whether Accept-Encoding lists ``coding`` with a non-zero weight."""
        for item in self.headers.get("accept-encoding", "").split(","):
            name, _, params = item.strip().partition(";")
            if name.strip().lower() == coding and params.replace(" ", "") not in ("q=0", "q=0.0"):
                return True
        return False


def parse_head(data: bytes) -> Request:
    """Parse a request line and headers ending in a blank line."""
    try:
        lines = data.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError as exc:
        raise BadRequest("malformed request line") from exc
    if not version.startswith("HTTP/1."):
        raise BadRequest(f"unsupported version {version!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep:
                raise BadRequest(f"malformed header {line!r}")
            headers[name.strip().lower()] = value.strip()
    host = headers.get("host", "")
    if target.lower().startswith("http://"):
        parts = urlsplit(target)
        host = parts.netloc
        target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    hostname = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return Request(method.upper(), target, version, headers, hostname.lower())


@dataclass(frozen=True, slots=True)
class Reply:
    """What to send back. ``stream`` yields raw bytes written after ``body``.

    The server adds Content-Length from ``body`` unless ``stream`` is set or the headers
    already carry Content-Length or Transfer-Encoding.
    """

    status: int | None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    stream: Callable[[], AsyncIterator[bytes]] | None = None
    delay: float = 0.0
    action: Action = Action.RESPOND
    close: bool = False


def html(status: int, text: str, *headers: tuple[str, str]) -> Reply:
    """A UTF-8 HTML reply."""
    return Reply(status, (("Content-Type", HTML), *headers), text.encode())


def page(status: int, title: str, extra: str = "", *headers: tuple[str, str]) -> Reply:
    """A small HTML document with a title, an optional body fragment and a link home."""
    doc = (
        f"<!DOCTYPE html><html><head><title>{title}</title></head>"
        f'<body><h1>{title}</h1>{extra}<p><a href="/">home</a></p></body></html>\n'
    )
    return html(status, doc, *headers)


def redirect(status: int, location: str) -> Reply:
    """A redirect to ``location`` (sent verbatim, relative or absolute)."""
    return page(status, f"Moved {status}", f'<a href="{location}">here</a>', ("Location", location))


def encode_head(reply: Reply, keep_alive: bool) -> bytes:
    """Status line and headers for ``reply``."""
    status = reply.status or 500
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    names = {name.lower() for name, _ in reply.headers}
    lines = [f"HTTP/1.1 {status} {reason}", "Server: gossamer-testweb"]
    lines += [f"{name}: {value}" for name, value in reply.headers]
    framed = "content-length" in names or "transfer-encoding" in names
    if not framed and reply.stream is None and status not in NO_BODY_STATUSES:
        lines.append(f"Content-Length: {len(reply.body)}")
    if not keep_alive:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def write_to(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Write ``data`` to a client's connection; one the client closed raises
    :class:`ConnectionResetError` on either event loop (uvloop raises RuntimeError)."""
    if writer.is_closing():
        raise ConnectionResetError("the client closed the connection")
    writer.write(data)
