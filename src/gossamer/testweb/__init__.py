"""A deterministic, seed-generated web of virtual hosts served on loopback for tests.

``generate(seed)`` builds the pages (pure data); ``TestWebServer(web)`` serves every host
from one port, dispatching on the Host header; ``web.reachable(seeds)`` is the ground truth a
correct crawl is compared with. Run ``python -m gossamer.testweb`` to serve one by hand.

This package may import the standard library and brotli only: it is the crawler's opponent,
so it shares none of its code.
"""

from gossamer.testweb.catalog import ALL_SPECIALS, QUICK_SPECIALS, SLOW, SPECIALS, TRAPS
from gossamer.testweb.model import Form, Host, Link, LinkKind, Page, Robots, RobotsKind, Role
from gossamer.testweb.payloads import CHARSET_SAMPLES
from gossamer.testweb.server import LogEntry, ServerStats, TestWebServer
from gossamer.testweb.site import generate
from gossamer.testweb.truth import split_url
from gossamer.testweb.web import Web

__all__ = [
    "ALL_SPECIALS",
    "CHARSET_SAMPLES",
    "QUICK_SPECIALS",
    "SLOW",
    "SPECIALS",
    "TRAPS",
    "Form",
    "Host",
    "Link",
    "LinkKind",
    "LogEntry",
    "Page",
    "Robots",
    "RobotsKind",
    "Role",
    "ServerStats",
    "TestWebServer",
    "Web",
    "generate",
    "split_url",
]
