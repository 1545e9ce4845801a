"""The ``Host`` check of the metrics endpoints (``/metrics``, ``/healthz``, ``/queued`` of a
crawl, a worker and ``gossamer cluster metrics``): a DNS-rebinding page must not read them.

Such a page is served under its own name (``evil.example``), which its author then points
at 127.0.0.1 (or a pod's address); the browser sends ``Host: evil.example:9100`` and lets
the page read the answer. So the check is on the name: a request is answered when its
``Host`` is

* an IP address (``127.0.0.1:9100``, ``[::1]:9100``, ``10.1.2.3:9100``, and the other forms a
  URL's host reads as one, such as ``0x7f.1:9100``: see :mod:`gossamer.addresses`): no name,
  nothing to rebind. This is what Prometheus sends when it scrapes a pod by address (Kubernetes
  service discovery, the ``prometheus.io`` annotations, a ServiceMonitor's endpoints) and
  what a kubelet's HTTP probe sends (``<pod-ip>:<port>``);
* ``localhost``, this machine's host name (``socket.gethostname()``: ``crawler-1:9100`` in a
  static scrape config), or the ``metrics_bind`` address when it is a name;
* one of the names of ``metrics_hosts`` (``--metrics-hosts``, ``GOSSAMER_METRICS_HOSTS``):
  a Service's DNS name that KEDA or Prometheus asks by (``gossamer-metrics.gossamer.svc``),
  a Compose service name; ``*`` turns the check off;
* absent (an HTTP/1.0 client: browsers always send one).

The port is not compared: a browser's origin holds the port already (a page cannot read
another port's answers without CORS, which these endpoints never send), and port mappings
(``docker run -p 9200:9100``, a Service's ``port`` and ``targetPort``) make clients name
another port than the one bound. Anything else is answered 400 ``unknown Host``.
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from gossamer.addresses import ip_literal

__all__ = ["ANY_HOST", "HostCheck", "host_middleware"]

log = logging.getLogger(__name__)

ANY_HOST = "*"
"""The ``metrics_hosts`` entry that answers every ``Host``."""
_HOST = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::\d{1,5})?")


@dataclass(frozen=True, slots=True)
class HostCheck:
    """Which ``Host`` headers the metrics endpoints answer (see the module doc)."""

    names: frozenset[str]
    """Host names answered (lower case, no final dot), besides every IP address."""
    any_host: bool = False

    @classmethod
    def for_bind(cls, bind: str, hosts: Iterable[str] = ()) -> HostCheck:
        """The check of a server bound to ``bind`` with the user's ``hosts`` (``*``: any)."""
        given = {_name(host) for host in hosts}
        names = {"localhost", _name(socket.gethostname()), _name(bind)} | given
        return cls(frozenset(names - {ANY_HOST, ""}), ANY_HOST in given)

    def allows(self, host: str | None) -> bool:
        """Whether a request with this ``Host`` header (None: none) is answered."""
        if host is None or self.any_host:
            return True
        match = _HOST.fullmatch(host.strip())
        if match is None:
            return False
        named = match["host"]
        return ip_literal(named) is not None or _name(named) in self.names


def host_middleware(check: HostCheck) -> Middleware:
    """An aiohttp middleware answering 400 to a request whose ``Host`` ``check`` refuses."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if not check.allows(host):
            log.debug("refused Host %r from %s", (host or "")[:100], request.remote)
            raise web.HTTPBadRequest(text="unknown Host\n")
        return await handler(request)

    return middleware


def _name(host: str) -> str:
    return host.strip().lower().rstrip(".")
