"""The barrier between a rendered page and the network: every connection the browser makes
goes through gossamer's fetcher (the route handler of :mod:`gossamer.fetch.render.page`) or
is refused.

The route handler sees only what Playwright intercepts: the HTTP requests and WebSockets of
the pages it is installed on. Layers, each measured on Debian's chromium-headless-shell with
trap listeners on other ports of 127.0.0.1 and on 127.0.0.2, TCP and UDP
(tests/fetch/render/test_render_escape.py):

- **Routing at the context**, not the page, so a popup's navigation meets the handler too
  (which refuses it), and every page the context opens but the rendered one is closed as it
  opens (``window.open``, ``target=_blank`` links and forms: with ``page.route`` they
  reached the traps, a form's POST with its body).
- **A refusing proxy** (:class:`RefusingProxy`): every browser runs with ``--proxy-server``
  set to a port of 127.0.0.1 the pool holds bound and never listens on, and
  ``--proxy-bypass-list=<-loopback>`` (without it loopback is exempt, and popups and TURN over
  TCP still reached 127.0.0.1). A connection the router did not fulfil (a popup's
  navigation, a beacon, a prefetch, a preconnect, TURN over TCP, a WebSocket, a WebTransport
  session, which then asks the proxy for a tunnel instead of sending QUIC datagrams) can only
  go to that port, where it is refused; a fixed proxy has no DIRECT fallback.
- **WebRTC without UDP**: ``--force-webrtc-ip-handling-policy=disable_non_proxied_udp``
  (in :data:`gossamer.fetch.render.browser.BROWSER_ARGS`) stops STUN and TURN datagrams to
  any address, from any frame; what WebRTC then tries over TCP goes to the refusing proxy.
  (``--webrtc-ip-handling-policy`` is not a switch: it changed nothing.)
- **The APIs removed** (:data:`NO_DIRECT_APIS`): ``RTCPeerConnection`` and its kin and
  ``WebTransport`` are deleted before the page's scripts run, in every frame Playwright
  reaches (a fresh ``about:blank`` iframe, a ``data:`` iframe and a ``window.open('')`` popup
  were all without them). It is a script run in each new frame, so it is the second layer,
  not the barrier: the flags alone held every vector (the escape test runs the browser with
  no router, no popup closing and no API removed as well).

Beside them: the host resolver rules (no name resolves but 127.0.0.1's; an address such as
127.0.0.2 is refused too), service workers blocked on every context, WebSockets closed by the
router before they connect.

Limits: the barrier is the browser's own proxy and WebRTC settings: a Chromium that ignores
them (a build without ``--force-webrtc-ip-handling-policy``) reopens the way, and the escape
test is what notices. What cannot be trapped on loopback (the system resolver, multicast) is
left to the resolver rules and the WebRTC policy. ``<link rel=preconnect>`` opens no
connection at all in this build (in markup, by script or ``Link`` header, with or without the
barrier); the proxy would take it if it did. Chromium's Local Network Access checks refuse a
WebTransport session to 127.0.0.1 before the barrier is reached, so the proxy's hold on it was
measured with them off (``--disable-features=LocalNetworkAccessChecks``); a public target is
not subject to those checks, which is why the proxy must hold it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

log = logging.getLogger(__name__)

NO_DIRECT_APIS = """
(() => {
  for (const name of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel',
      'RTCIceTransport', 'RTCSctpTransport', 'RTCDtlsTransport', 'RTCIceCandidate',
      'RTCSessionDescription', 'WebTransport']) {
    try { delete globalThis[name]; } catch (e) {}
  }
})();
"""
"""An init script: the APIs that open connections the router cannot see, removed."""


class RefusingProxy:
    """A port of 127.0.0.1 held bound and never listened on: connections to it are refused.
    The browser's proxy, so that whatever it does not hand to the router goes nowhere."""

    def __init__(self) -> None:
        self._socket: socket.socket | None = None

    def open(self) -> None:
        """Take a free port (once)."""
        if self._socket is not None:
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", 0))
        except OSError:
            sock.close()
            raise
        self._socket = sock

    def close(self) -> None:
        """Give the port back (after the browsers using it are gone)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    @property
    def args(self) -> tuple[str, ...]:
        """The browser flags sending every connection to this port, loopback's too."""
        if self._socket is None:
            raise RuntimeError("the refusing proxy is not open")
        port = self._socket.getsockname()[1]
        return (f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>")


async def seal(context: BrowserContext, page: Page) -> None:
    """Remove the unrouted APIs from ``context``'s frames and close every page it opens but
    ``page`` (popups) as it opens. Call before ``page`` navigates."""
    await context.add_init_script(NO_DIRECT_APIS)

    async def close_popup(popup: Page) -> None:
        if popup is page:
            return
        log.debug("closing a popup the page opened")
        with contextlib.suppress(Exception):
            await popup.close()

    context.on("page", close_popup)
