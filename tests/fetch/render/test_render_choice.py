"""--render settings (flags, TOML, environment, cluster jobs) and auto's choice of pages,
without a browser."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossamer.cluster.jobs import job_json, job_settings, parse_job
from gossamer.fetch.render import HostLearner, Verdict, read_signals
from gossamer.flags import add_crawl_flags, settings_from_args
from gossamer.settings import JobSettings, SettingsError, load_settings

URL = "http://site.test/page"


def test_render_settings_from_flags_toml_and_environment(tmp_path: Path) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_crawl_flags(parser, cluster=True)
    args = parser.parse_args(
        ["http://a.test/", "--render", "auto", "--render-url", r"/app/\d{1,3}", "--render-url",
         "/spa", "--render-scroll", "4", "--render-concurrency", "3"]
    )  # fmt: skip
    job = settings_from_args(args, JobSettings)
    assert job.render == "auto"
    assert job.render_url == [r"/app/\d{1,3}", "/spa"]  # a comma inside a pattern stays
    assert (job.render_scroll, job.render_concurrency) == (4, 3)
    stored = parse_job(job_json(job_settings(job, ["http://a.test/"])), "job")
    assert (stored.render, stored.render_url, stored.render_scroll) == ("auto", job.render_url, 4)
    config = tmp_path / "crawl.toml"
    config.write_text('render = "always"\nrender_url = ["/x"]\nrender_block = ["image"]\n')
    settings = load_settings(config=config, env={"GOSSAMER_RENDER_TIMEOUT": "3"})
    assert settings.render == "always" and settings.render_url == ["/x"]
    assert settings.render_block == ["image"] and settings.render_timeout == 3
    assert load_settings(env={"GOSSAMER_RENDER_URL": "a,b{1,2}"}).render_url == ["a,b{1,2}"]
    assert load_settings(env={}).render == "never"


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        ({"render": "sometimes"}, "render"),
        ({"render_url": ["(unclosed"]}, "render_url"),
        ({"render_block": ["script"]}, "render_block"),
        ({"render_timeout": 0}, "render_timeout"),
    ],
)
def test_bad_render_settings_name_their_field(flags: dict[str, object], field: str) -> None:
    with pytest.raises(SettingsError, match=field):
        load_settings(flags, env={})


def _page(body: str, script: bool = True) -> bytes:
    tag = "<script src=/app.js></script>" if script else ""
    return f"<html><body>{body}{tag}</body></html>".encode()


PROSE = "<p>" + "Words the server wrote for this page. " * 10 + "</p>"
LINKS = "".join(f'<a href="/p{i}">p{i}</a>' for i in range(5))


@pytest.mark.parametrize(
    ("body", "script", "candidate"),
    [
        ('<div id="root"></div>', True, True),  # an empty mount point
        ('<div id="app"> </div>' + PROSE, True, True),
        ("<noscript>Please enable JavaScript.</noscript><p>Loading</p>", True, True),
        ("<p>Loading</p>", True, True),  # little text, no links
        ('<div id="root"></div>', False, False),  # no script: rendering changes nothing
        ('<div id="root"></div><script type="application/ld+json">{}</script>', False, False),
        ('<div id="root"></div><script type="module">x()</script>', False, True),
        (PROSE + LINKS, True, False),  # server-rendered text with links
        ('<div id="root">' + PROSE + LINKS + "</div>", True, False),  # hydrated markup
        ('<div id="__next"></div>' + PROSE + LINKS, True, False),  # server data with links
    ],
)
def test_candidates_ship_scripts_and_look_empty(body: str, script: bool, candidate: bool) -> None:
    assert read_signals(_page(body, script), URL).candidate is candidate


def test_signals_count_same_site_links_and_visible_text() -> None:
    html = _page(
        '<a href="/a">a</a><a href="http://www.site.test/b#x">b</a>'
        '<a href="http://other.test/c">c</a><style>p{}</style><script>var x = 1;</script>x'
    )
    signals = read_signals(html, URL)
    assert signals.links == {"http://site.test/a", "http://www.site.test/b"}
    assert signals.text_chars == len("a b c x")


def test_a_host_learns_rendering_is_useless_and_rechecks_a_share() -> None:
    learner = HostLearner(probe=3, recheck=10)
    empty = read_signals(_page('<div id="root"></div>'), URL)
    for _ in range(3):
        assert learner.should_render("h", empty)
        learner.observe("h", useful=False)
    assert learner.verdict("h") is Verdict.USELESS
    decisions = [learner.should_render("h", empty) for _ in range(20)]
    assert decisions.count(True) == 2  # one in ten rechecked
    learner.observe("h", useful=True)  # a recheck that found links turns rendering on
    assert learner.verdict("h") is Verdict.NEEDED
    assert learner.should_render("h", empty)
    complete = read_signals(_page(PROSE + LINKS), URL)
    assert not learner.should_render("h", complete)
    assert learner.verdict("other") is Verdict.LEARNING


def test_the_oldest_hosts_are_forgotten_first() -> None:
    """Past ``max_hosts`` the host first seen is forgotten, however recently it was seen."""
    learner = HostLearner(probe=1, max_hosts=2)
    for host in ("a", "b", "a", "c"):
        learner.observe(host, useful=True)
    assert learner.verdict("a") is Verdict.LEARNING  # forgotten
    assert learner.verdict("b") is learner.verdict("c") is Verdict.NEEDED


IN_A_GIGABYTE = """
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from gossamer.fetch.render import read_signals
started = time.process_time()
signals = read_signals(sys.stdin.buffer.read(), "http://site.test/page")
print(signals.scripts, signals.text_chars, time.process_time() - started)
"""


@pytest.mark.parametrize(
    "body",
    [
        b"".join(b"<p><b c=%d>x" % n for n in range(4096)),  # 27 KB: 3 GB, 9.9 s unguarded
        b"<div>" * 50_000 + b"<script>app()</script>",  # 250 KB: 3.1 s unguarded
    ],
    ids=["formatting", "nesting"],
)
def test_a_hostile_page_is_read_guarded(body: bytes) -> None:
    """auto reads every served page's signals, on the event loop below 512 KiB: lexbor's
    parse is guarded (gossamer.parse.guard), in a gigabyte and a fraction of a second."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", IN_A_GIGABYTE], input=body, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()[-500:]
    scripts, _, seconds = done.stdout.split()
    assert float(seconds) < 1.0
    assert scripts == (b"True" if b"<script>" in body else b"False")
