"""Hostile rules on real pages served on loopback: every page's rule ends within its time
bound (a page over it is the rule's error, and the crawl goes on), outputs that would hold
gigabytes are refused, and a crawl stopped by SIGTERM while a rule reads a page exits."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from gossamer.cli import main

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}"}


def _html(body: str) -> bytes:
    return f"<html><head><title>t</title></head><body>{body}</body></html>".encode()


PAGES = {
    # lxml's following-sibling axis costs the square of the page: minutes for 110 KB
    "/xpath": _html("<h2>t</h2><p>x</p>" * 6000),
    # lexbor's nested :has() on a deep tree
    "/css": _html("<div>" * 1000 + "<p>x</p>" * 2000 + "</div>" * 1000),
    # polynomial and exponential backtracking in Python's re
    "/poly": _html("<p>" + '"sku":"' * 15000 + "</p>"),
    "/expo": _html("<p>" + "1" * 40 + "x</p>"),
    # 1.6 GB and 1 GB outputs
    "/replace": _html("<p>" + "y" * 200_000 + "</p>"),
    "/join": _html("<p>a</p>" * 10_000),
}
PAGES["/"] = _html("<h1>Home</h1>" + "".join(f'<a href="{path}">{path}</a>' for path in PAGES))

RULES = """
[[rule]]
name = "xpath"
url = "/xpath$"
[[rule.field]]
name = "p"
xpath = "//h2/following-sibling::p"
multiple = true

[[rule]]
name = "css"
url = "/css$"
[[rule.field]]
name = "p"
css = "div:has(div:has(div:has(q)))"

[[rule]]
name = "poly"
url = "/poly$"
[[rule.field]]
name = "p"
regex = '"sku":"(.*)".*"price":"(.*)"'

[[rule]]
name = "expo"
url = "/expo$"
[[rule.field]]
name = "p"
regex = '(?:\\d{1,3}[ .]?)+$'

[[rule]]
name = "replace"
url = "/replace$"
[[rule.field]]
name = "p"
css = "p"
process = [{replace = "", with = "WITH"}]

[[rule]]
name = "join"
url = "/join$"
[[rule.field]]
name = "p"
css = "p"
multiple = true
process = [{join = "JOIN"}]

[[rule]]
name = "home"
url = "/$"
[[rule.field]]
name = "title"
css = "h1"
""".replace("WITH", "w" * 8000).replace("JOIN", "j" * 100_000)

STOPPED = "stopped after 1 s on this page"
EXPECTED = {
    "xpath": STOPPED,
    "css": STOPPED,
    "poly": None,  # RE2: no match, at once
    "expo": None,
    "replace": "replace: output of 1600208000 characters, over 4194304",
    "join": "join: output of 999910000 characters, over 4194304",
}


class _Site(http.server.ThreadingHTTPServer):
    served: list[str]
    asked: threading.Event


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Site

    def do_GET(self) -> None:
        body = PAGES.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")
        self.server.served.append(self.path)
        self.server.asked.set()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[_Site]:
    """The hostile pages on loopback (a thread: the commands run their own loops)."""
    server = _Site(("127.0.0.1", 0), _Handler)
    server.served, server.asked = [], threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _base(site: _Site) -> str:
    return f"http://127.0.0.1:{site.server_address[1]}"


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.toml"
    path.write_text(RULES, "utf-8")
    return path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rules_try_ends_within_the_bound_of_a_page(
    site: _Site, rules: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    url = f"{_base(site)}/{name}"
    assert main(["rules", "try", str(rules), url, "--rule-timeout", "1"]) == 0
    assert time.monotonic() - started < 15
    output = json.loads(capsys.readouterr().out)
    assert output["rule"] == name
    expected = EXPECTED[name]
    if expected is None:
        assert output["errors"] == [] and output["items"] == [{"p": None}]
    else:
        assert any(expected in error for error in output["errors"]), output["errors"]
        assert output["items"] in ([], [{"p": None}])


@pytest.mark.slow
def test_a_crawl_records_each_hostile_page_and_goes_on(
    site: _Site, rules: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "gossamer.cli", "crawl", f"{_base(site)}/", "--rules", str(rules),
         "--rule-timeout", "1", "--out", str(out), "--quiet", "--no-text", "--robots-retry", "1"],
        env=ENV, capture_output=True, text=True, timeout=50,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 40
    records = {}
    for line in (out / "pages.jsonl").read_text("utf-8").splitlines():
        record = json.loads(line)
        records[record["url"].removeprefix(_base(site))] = record
    for name, expected in EXPECTED.items():
        errors = records[f"/{name}"]["rule_errors"]
        assert records[f"/{name}"]["rule"] == name
        if expected is None:
            assert errors == []
        else:
            assert any(expected in error for error in errors), errors
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert {"rule": "home", "fields": {"title": "Home"}}.items() <= items[0].items() or any(
        item["fields"] == {"title": "Home"} for item in items
    )
    stats = json.loads((out / "stats.json").read_text())
    assert stats["rule_errors"] >= 4


def _busy_worker(pid: int) -> psutil.Process | None:
    """A child of ``pid`` that has used a second of CPU: a rule worker reading a page."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return None
    for child in children:
        try:
            if sum(child.cpu_times()[:2]) > 1.0:
                return child
        except psutil.Error:
            continue
    return None


@pytest.mark.slow
def test_sigterm_stops_a_crawl_while_a_rule_reads_a_page(
    site: _Site, rules: Path, tmp_path: Path
) -> None:
    crawler = subprocess.Popen(
        [sys.executable, "-m", "gossamer.cli", "crawl", f"{_base(site)}/xpath", "--rules",
         str(rules), "--rule-timeout", "300", "--out", str(tmp_path / "out"), "--quiet",
         "--no-text", "--robots-retry", "1"],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert site.asked.wait(20), "the page was never asked for"
        deadline = time.monotonic() + 20
        busy = None
        while busy is None and time.monotonic() < deadline:
            busy = _busy_worker(crawler.pid) or (None if crawler.poll() is None else "ended")
            time.sleep(0.1)  # polling the worker's CPU time: there is no event to wait on
        assert isinstance(busy, psutil.Process), "no rule worker was busy with the page"
        crawler.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        crawler.wait(timeout=20)
        assert time.monotonic() - stopped < 10
        assert not busy.is_running() or busy.status() == psutil.STATUS_ZOMBIE
    finally:
        crawler.kill()
        crawler.wait()
