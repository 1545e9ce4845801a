"""WACZ files opened by other tools: validated by py-wacz (``wacz validate``), replayed by
pywb (``wb-manager add --unpack-wacz`` merges the WACZ's own index, so a wrong key, offset or
length fails the replay), and the index keys compared with the ``surt`` package's."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from tests.e2e.harness import load_records, run_crawl

from gossamer.testweb import TestWebServer, generate
from gossamer.wacz import write_wacz
from gossamer.wacz.surt import surt

from .archives import ODD, ORIGIN, PAGE, T0, write_crawl
from .reader import read_wacz
from .tools import add_collection, run_tool, wayback

URLS = [
    "http://site0.test:8000/",
    "http://site0.test:8000/a/B?z=1&a=2",
    "http://127.0.0.1:8080/x",
    "https://www.Example.com/",
    "http://www2.example.com/a/?",
    "http://example.com:80/a#frag",
    "https://example.com:443/a",
    "http://example.com/a?x=1&jsessionid=0123456789abcdef0123456789abcdef",
    "http://example.com/a?PHPSESSID=0123456789abcdef0123456789abcdef&x=1",
    "http://example.com/%7Efoo/caf%C3%A9",
    "http://example.com/a%20b",
    "http://user:pw@example.com/",
    "http://example.com/a?b&a=&c",
    "http://xn--caf-dma.example/",
    "http://example.com",
    "http://example.com/%25%32%35",
    "http://example.com/caf%C3%A9?q=%E2%9C%93&a=b#x",
    "http://EXAMPLE.com./Path/",
    "http://example.com/a%2Fb?c%3Dd=1",
    "http://[::1]:8080/a",
]
TIMEOUT = aiohttp.ClientTimeout(total=10)


def _stamp(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y%m%d%H%M%S")


def test_keys_are_the_surt_packages(tmp_path: Path) -> None:
    script = "import sys, surt\nfor u in sys.argv[1:]: print(surt.surt(u))"
    done = run_tool("python", "-c", script, *URLS)
    assert done.returncode == 0, done.stderr
    assert [surt(u) for u in URLS] == done.stdout.splitlines()


async def test_hard_cases_validate_and_replay(tmp_path: Path) -> None:
    await write_crawl(tmp_path / "out")
    wacz = tmp_path / "crawl.wacz"
    write_wacz([tmp_path / "out"], wacz)
    done = run_tool("wacz", "validate", "-f", str(wacz))
    assert done.returncode == 0 and "Validation succeeded" in done.stdout, done.stdout
    add_collection(tmp_path, "hard", wacz)
    async with wayback(tmp_path) as base, aiohttp.ClientSession(timeout=TIMEOUT) as http:
        replay = f"{base}/hard/{{}}id_/{ORIGIN}{{}}"
        async with http.get(replay.format(_stamp(T0), "/")) as page:
            assert (page.status, await page.read()) == (200, PAGE)
        async with http.get(replay.format(_stamp(T0 + 60), "/")) as revisit:
            # the revisit record served with the payload of the capture it refers to
            assert (revisit.status, await revisit.read()) == (200, PAGE)
            assert revisit.headers["Memento-Datetime"].endswith("08:01:00 GMT")
        async with http.get(replay.format(_stamp(T0), "/odd")) as odd:
            assert (odd.status, await odd.read()) == (200, ODD)
        async with http.get(replay.format(_stamp(T0), "/secret")) as secret:
            assert secret.status == 404  # withheld (noindex): not in the index


async def test_crawl_with_wacz_resumed_replays(tmp_path: Path) -> None:
    web = generate(3, hosts=2, pages_per_host=8, crawl_delay=0.0, specials=())
    args = ["--wacz", "--sitemaps", "off", "--robots-retry", "0.3"]
    async with TestWebServer(web) as server:
        code, output = await run_crawl(tmp_path, server, [server.url(0), *args, "--max-pages", "5"])
        assert code == 0, output
        first = read_wacz(tmp_path / "out" / "crawl.wacz")
        code, output = await run_crawl(tmp_path, server, ["--resume", *args])
        assert code == 0, output
        wacz = tmp_path / "out" / "crawl.wacz"
        final = read_wacz(wacz)
        records = load_records(tmp_path)
        html = [r for r in records if r["status"] == 200 and r["content_type"] == "text/html"]
        assert len(first.pages) < len(final.pages) == len(html) > 8
        assert len({f["filename"] for _, _, f in final.index}) == 2  # both runs' WARC files
        done = run_tool("wacz", "validate", "-f", str(wacz))
        assert done.returncode == 0 and "Validation succeeded" in done.stdout, done.stdout
        add_collection(tmp_path, "crawl", wacz)
        async with wayback(tmp_path) as base, aiohttp.ClientSession(timeout=TIMEOUT) as http:
            for page in final.pages[:: max(1, len(final.pages) // 4)]:
                stamp = "".join(c for c in page["ts"] if c.isdigit())[:14]
                async with http.get(f"{base}/crawl/{stamp}id_/{page['url']}") as replayed:
                    body = await replayed.read()
                host = page["url"].split("/")[2].split(":")[0]
                live_url = server.url(host, "/" + page["url"].split("/", 3)[3])
                async with http.get(
                    live_url.replace(host, "127.0.0.1"), headers={"Host": live_url.split("/")[2]}
                ) as live:
                    assert (replayed.status, body) == (200, await live.read())
                assert f"<title>{page['title']}</title>".encode() in body
