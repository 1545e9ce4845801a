"""``gossamer rules check|test|try`` run through the CLI entry point on real files."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gossamer.cli import main

RULES = """
[[rule]]
name = "product"
url = '^https://shop\\.test/p/'

[[rule.field]]
name = "title"
css = "h1"
required = true

[[rule.field]]
name = "price"
css = ".price"
process = [{call = "cents"}]

[[rule.link]]
allow = ['/p/']

[[rule.sample]]
html = "samples/one.html"
url = "https://shop.test/p/1"
expect = "samples/one.json"
"""

PAGE = """<html><body><h1>Lamp</h1><span class="price">12.50</span>
<a href="/p/2">next</a><a href="/about">about</a></body></html>"""

FUNCTIONS = "def cents(value):\n    return round(float(value) * 100)\n"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A rule directory with one sample and the module its function lives in."""
    (tmp_path / "rules" / "samples").mkdir(parents=True)
    (tmp_path / "rules" / "shop.toml").write_text(RULES, "utf-8")
    (tmp_path / "rules" / "samples" / "one.html").write_text(PAGE, "utf-8")
    (tmp_path / "shopfns.py").write_text(FUNCTIONS, "utf-8")
    monkeypatch.chdir(tmp_path)  # `shopfns` imports from the working directory, as hooks do
    return tmp_path


FUNCTION = ["--function", "cents=shopfns:cents"]
EXPECTED = {
    "url": "https://shop.test/p/1",
    "rule": "product",
    "items": [{"title": "Lamp", "price": 1250}],
    "links": ["https://shop.test/p/2"],
    "errors": [],
}


def test_check_accepts_good_documents(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "check", "rules", *FUNCTION]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: 1 rules in 1 documents, 1 samples (sha256 ")


def test_check_lists_each_problem_and_exits_2(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = site / "bad.toml"
    bad.write_text('[[rule]]\nname = "x"\nurl = "("\ncolour = 1\n', "utf-8")
    assert main(["rules", "check", "rules", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "rules/shop.toml: rule 'product': field 'price': process[0]: call: no function "
        "'cents' in rule_functions (known: none)",
        f"{bad}: rule 'x': unknown key 'colour'",
        f"{bad}: rule 'x': url: bad regex '(': missing ): (",
    ]


def test_functions_come_from_the_settings_file(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = site / "gossamer.toml"
    config.write_text('[rule_functions]\ncents = "shopfns:cents"\n', "utf-8")
    assert main(["rules", "check", "rules", "--config", str(config)]) == 0
    config.write_text('[crawl.rule_functions]\ncents = "shopfns:nothing"\n', "utf-8")
    assert main(["rules", "check", "rules", "--config", str(config)]) == 2
    assert "shopfns has no function 'nothing'" in capsys.readouterr().err
    config.write_text('[rule_functions]\n"bad name" = "shopfns:cents"\n', "utf-8")
    assert main(["rules", "check", "rules", "--config", str(config)]) == 2


def test_test_writes_then_compares_samples(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect = site / "rules" / "samples" / "one.json"
    assert main(["rules", "test", "rules", *FUNCTION]) == 1
    assert "no rules/samples/one.json yet (run with --update" in capsys.readouterr().out
    assert main(["rules", "test", "rules", "--update", *FUNCTION]) == 0
    assert json.loads(expect.read_text("utf-8")) == EXPECTED
    capsys.readouterr()
    assert main(["rules", "test", "rules", *FUNCTION]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ok    rules/shop.toml: rule 'product': sample #1 (one.html)",
        "1 samples passed, 0 failed",
    ]


def test_test_shows_a_diff_when_a_sample_changes(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expect = site / "rules" / "samples" / "one.json"
    expect.write_text(json.dumps({**EXPECTED, "links": []}), "utf-8")
    assert main(["rules", "test", "rules", *FUNCTION]) == 1
    out = capsys.readouterr().out
    assert "FAIL  rules/shop.toml: rule 'product': sample #1 (one.html)" in out
    assert '-  "links": [],\n+  "links": [\n+    "https://shop.test/p/2"\n+  ],' in out
    assert out.endswith("0 samples passed, 1 failed\n")


def test_an_expected_list_compares_the_items_only(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expect = site / "rules" / "samples" / "one.json"
    expect.write_text(json.dumps(EXPECTED["items"]), "utf-8")
    assert main(["rules", "test", "rules", *FUNCTION]) == 0
    expect.write_text(json.dumps({"items": []}), "utf-8")
    assert main(["rules", "test", "rules", *FUNCTION]) == 1
    assert '-  "items": []\n+  "items": [' in capsys.readouterr().out


def test_expected_items_may_be_items_jsonl_lines(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expect = site / "rules" / "samples" / "one.json"
    line = {"url": "https://shop.test/p/1", "rule": "product", "fetched_at": None}
    expect.write_text(json.dumps([{**line, "fields": EXPECTED["items"][0]}]), "utf-8")
    assert main(["rules", "test", "rules", *FUNCTION]) == 0
    expect.write_text(json.dumps([{"rule": "other", "fields": EXPECTED["items"][0]}]), "utf-8")
    assert main(["rules", "test", "rules", *FUNCTION]) == 1
    assert '-      "rule": "other",\n+      "rule": "product",' in capsys.readouterr().out


def test_try_on_a_page_no_rule_is_for_prints_rule_null(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = "rules/samples/one.html"
    assert main(["rules", "try", "rules", page, "--url", "https://x.test/", *FUNCTION]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "url": "https://x.test/", "rule": None, "items": [], "links": None, "errors": []
    }  # fmt: skip
    assert "no rule is for https://x.test/" in err


def test_a_sample_read_by_another_rule_fails(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    higher = '[[rule]]\nname = "all-products"\nurl = "/p/"\npriority = 1\n'
    (site / "rules" / "z.toml").write_text(higher, "utf-8")
    assert main(["rules", "test", "rules", "--update", *FUNCTION]) == 1
    assert "https://shop.test/p/1 is read by rule 'all-products'" in capsys.readouterr().out


def test_try_prints_the_page_json(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = "rules/samples/one.html"
    code = main(["rules", "try", "rules", page, "--url", "https://shop.test/p/1", *FUNCTION])
    assert code == 0
    assert json.loads(capsys.readouterr().out) == EXPECTED


def test_try_refuses_what_it_cannot_read(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = "rules/samples/one.html"
    assert main(["rules", "try", "rules", page, *FUNCTION]) == 1
    assert "give --url" in capsys.readouterr().err
    assert main(["rules", "try", "rules", page, "--url", "ftp://x/", *FUNCTION]) == 1
    assert "bad --url 'ftp://x/'" in capsys.readouterr().err
    assert main(["rules", "try", "rules", "missing.html", "--url", "https://x.test/p/"]) == 2
    assert (
        main(["rules", "try", "rules", "missing.html", "--url", "https://shop.test/p/", *FUNCTION])
        == 1
    )
    assert "cannot read missing.html: No such file" in capsys.readouterr().err


LIVE_RULES = """
[[rule]]
name = "live"
url = '^http://127\\.0\\.0\\.1:\\d+/(p|private)/'
[[rule.field]]
name = "title"
css = "h1"
"""

LIVE = {
    "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private\n"),
    "/p/1": (301, {"Location": "/p/2"}, b""),
    "/p/2": (200, {"Content-Type": "text/html; charset=utf-8"}, b"<h1>Two</h1>"),
    "/private/3": (200, {"Content-Type": "text/html"}, b"<h1>Secret</h1>"),
}


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, headers, body = LIVE.get(self.path, (404, {}, b""))
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def live_site() -> Iterator[str]:
    """A real HTTP server on loopback (its own thread: the command runs its own loop)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_try_fetches_a_url_as_the_crawl_would(
    live_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "live.toml"
    rules.write_text(LIVE_RULES, "utf-8")
    assert main(["rules", "try", str(rules), f"{live_site}/p/1"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["url"] == f"{live_site}/p/2"  # the redirect followed
    assert output["items"] == [{"title": "Two"}]
    assert main(["rules", "try", str(rules), f"{live_site}/private/3"]) == 1
    assert "robots.txt disallows" in capsys.readouterr().err
    assert main(["rules", "try", str(rules), f"{live_site}/private/3", "--no-robots"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == [{"title": "Secret"}]
    assert main(["rules", "try", str(rules), f"{live_site}/p/404"]) == 1
    assert "status 404" in capsys.readouterr().err
