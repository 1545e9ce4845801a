"""A real documentation site (Debian's python3-doc HTML) served by nginx on three loopback hosts.

gossamer must find every page the reference crawler (GNU wget, recursive, robots obeyed)
finds, fetch nothing robots.txt forbids, and keep every host's Crawl-delay. Hosts are the
loopback addresses 127.0.0.2-4, so neither crawler needs a resolver override.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

DOCS = Path("/usr/share/doc/python3-doc/html")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
_HOST_A_OFF = (
    "/_sources/",
    "/library/",
    "/c-api/",
    "/whatsnew/",
    "/distutils/",
    "/howto/",
    "/tutorial/",
)
HOSTS = {
    "127.0.0.2": "User-agent: *\n"
    + "".join(f"Disallow: {p}\n" for p in _HOST_A_OFF)
    + "Crawl-delay: 0.2\n",
    "127.0.0.3": "User-agent: *\nDisallow: /c-api/\nDisallow: /_sources/\n",
    "127.0.0.4": None,
}
DISALLOWED = {"127.0.0.2": _HOST_A_OFF, "127.0.0.3": ("/c-api/", "/_sources/")}
CRAWL_DELAY = {"127.0.0.2": 0.2}
# A request's start is $msec - $request_time, read from nginx's cached clock, which lags while
# its one worker is busy: the spacing nginx sees can be a few milliseconds short of the spacing
# gossamer keeps between the moments it sends requests. Allow 5% of the delay.
CLOCK_SLACK = 0.05

pytestmark = [
    pytest.mark.slow,
    # wget's and gossamer's crawls of the real docs at their Crawl-delay take about 30 s alone.
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not (DOCS.is_dir() and os.path.exists(NGINX) and shutil.which("wget")),
        reason="needs nginx, wget and python3-doc (make test installs them)",
    ),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_block(host: str, port: int, robots_dir: Path) -> str:
    robots = HOSTS[host]
    robots_rule = (
        f"location = /robots.txt {{ root {robots_dir / host}; }}"
        if robots is not None
        else "location = /robots.txt { return 404; }"
    )
    return f"""
    server {{
        listen {host}:{port};
        root {DOCS.resolve()};
        access_log {robots_dir.parent}/access-{host}.log timed;
        {robots_rule}
    }}"""


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    base = tmp_path_factory.mktemp("nginx")
    robots_dir = base / "robots"
    for host, robots in HOSTS.items():
        (robots_dir / host).mkdir(parents=True)
        if robots is not None:
            (robots_dir / host / "robots.txt").write_text(robots)
    port = _free_port()
    user = "user root;" if os.geteuid() == 0 else ""
    servers = "".join(_server_block(host, port, robots_dir) for host in HOSTS)
    (base / "nginx.conf").write_text(
        f"""{user}
worker_processes 1;
daemon off;
pid {base}/nginx.pid;
error_log {base}/error.log;
events {{ worker_connections 1024; }}
http {{
    types {{ text/html html; text/plain txt; text/css css; application/javascript js;
            image/png png; }}
    default_type application/octet-stream;
    log_format timed '$msec $request_time $status "$request" "$http_user_agent"';
    client_body_temp_path {base}/body; proxy_temp_path {base}/proxy;
    fastcgi_temp_path {base}/fastcgi; uwsgi_temp_path {base}/uwsgi; scgi_temp_path {base}/scgi;
    keepalive_requests 100000;
    {servers}
}}
"""
    )
    proc = subprocess.Popen([NGINX, "-p", str(base), "-c", str(base / "nginx.conf")])
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.2", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail((base / "error.log").read_text())
            time.sleep(0.05)
    try:
        yield port, base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wget_html_pages(port: int, work: Path) -> set[str]:
    pages: set[str] = set()
    work.mkdir(parents=True, exist_ok=True)
    for host in HOSTS:
        log = work / f"wget-{host}.log"
        subprocess.run(
            [
                "wget",
                "-r",
                "-l",
                "inf",
                "-nv",
                "-e",
                "robots=on",
                "-P",
                str(work / host),
                "-o",
                str(log),
                f"http://{host}:{port}/",
            ],
            check=False,
            timeout=300,
        )
        for match in re.finditer(r"URL:\s*(\S+) \[[^\]]*\] -> \"([^\"]+)\"", log.read_text()):
            url, saved = match.groups()
            if saved.endswith(".html") and not url.endswith("/robots.txt"):
                pages.add(url)
    return pages


def _access_log(base: Path, host: str) -> list[tuple[float, str, str]]:
    entries = []
    for line in (base / f"access-{host}.log").read_text().splitlines():
        msec, request_time, _status, request, agent = re.match(  # type: ignore[union-attr]
            r'(\S+) (\S+) (\d+) "([^"]*)" "([^"]*)"', line
        ).groups()
        path = request.split(" ")[1] if " " in request else request
        entries.append((float(msec) - float(request_time), path, agent))
    return entries


def test_docs_crawl_matches_wget_obeys_robots_and_crawl_delay(
    nginx: tuple[int, Path], tmp_path: Path
) -> None:
    port, base = nginx
    reference = _wget_html_pages(port, tmp_path / "wget")
    assert len(reference) > 500, "the reference crawl found too little to compare"
    out = tmp_path / "gossamer"
    seeds = [f"http://{host}:{port}/" for host in HOSTS]
    started = time.time()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gossamer.cli",
            "crawl",
            *seeds,
            "--out",
            str(out),
            "--concurrency",
            "32",
            "--per-host",
            "2",
            "--quiet",
            "--follow-duplicates",  # the three hosts serve one site: each page has two copies
        ],
        check=True,
        timeout=240,
    )
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    html = {r["url"] for r in records if r["status"] == 200 and r["content_type"] == "text/html"}
    print(f"wget found {len(reference)} HTML pages, gossamer {len(html)} ({len(records)} records)")
    copies = [r for r in records if r.get("duplicate_of")]
    assert len(copies) > len(html) / 2  # the mirrors' pages are named duplicates of the first
    missing = {u for u in reference if u.replace("/index.html", "/") not in html and u not in html}
    assert not missing, f"gossamer missed {len(missing)} pages wget found: {sorted(missing)[:5]}"

    for host in HOSTS:
        ours = [
            e for e in _access_log(base, host) if e[2].startswith("gossamer/") and e[0] >= started
        ]
        assert ours, f"no gossamer request reached {host}"
        forbidden = [p for _, p, _ in ours if p.startswith(DISALLOWED.get(host, ("\0",)))]
        assert not forbidden, f"fetched paths robots.txt forbids on {host}: {forbidden[:5]}"
        paths = defaultdict(int)
        for _, path, _ in ours:
            paths[path] += 1
        assert max(paths.values()) == 1, "a URL was fetched twice"
        delay = CRAWL_DELAY.get(host)
        if delay is not None:
            starts = sorted(t for t, _, _ in ours)
            gaps = [b - a for a, b in itertools.pairwise(starts)]
            assert min(gaps) >= delay * (1 - CLOCK_SLACK), f"{host}: starts {min(gaps):.4f}s apart"
