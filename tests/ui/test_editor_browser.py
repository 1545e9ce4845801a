"""The rule editor in a real headless Chromium: rules for the test web built by clicks
(a single field, a list with a record container and a field some records lack, a rejected
element, a link rule), previewed, saved, then checked, tested and used by a real crawl; and
a hostile sample page that cannot run anything in the editor.

With ``GOSSAMER_UI_SCREENSHOTS=docs`` the first test saves docs/ui-editor.png.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from playwright.async_api import Browser, Page, async_playwright
from selectolax.lexbor import LexborHTMLParser
from tests.cluster.harness import WEB_ARGS, output, small_web
from tests.ui.editor_pages import click_in_frame, editor, fetch_sample, marked, open_editor
from tests.ui.test_browser import ARGS, CHROMIUM, SHOTS

from gossamer.testweb import TestWebServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120), pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("chromium-headless-shell is not installed")
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        await chromium.close()


async def new_page(browser: Browser) -> Page:
    page = await browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(20_000)
    return page


async def add_field(page: Page, name: str) -> None:
    await page.click("#add-field")
    await page.locator(".field.active .field-name").fill(name)


async def add_processor(page: Page, name: str, argument: str = "", option: str = "") -> None:
    field = page.locator(".field.active")
    await field.locator(".proc-name").select_option(name)
    await field.locator(".proc-arg").fill(argument)
    await field.locator(".proc-option").fill(option)
    await field.locator(".proc-add").click()


async def test_rules_built_by_clicks_crawl_the_test_web(browser: Browser, tmp_path: Path) -> None:
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    web_ = small_web(hosts=3, pages_per_host=25)
    async with (
        TestWebServer(web_, flaky_failures=0) as server,
        editor(rules_dir, ["127.0.0.1"], ["*.test=127.0.0.1"]) as served,
    ):
        home = server.url(0)
        page = await new_page(browser)
        await open_editor(page, served)
        await fetch_sample(page, home)
        port = home.rsplit(":", 1)[1].strip("/")
        assert await page.input_value("#rule-url") == rf"^http://site\d+\.test:{port}/$"
        await page.fill("#rule-name", "home")

        # A list: the record container picked; the nav link it also matched rejected.
        await page.click("#pick-record")
        await click_in_frame(page, "p a")
        assert await page.input_value("#record-css") == "a"
        await click_in_frame(page, "nav a")
        assert await page.input_value("#record-css") == "p a"
        assert await marked(page, "neg") == 1
        in_text = await page.evaluate(
            "() => document.getElementById('page-frame').contentDocument"
            ".querySelectorAll('p a').length"
        )
        assert await marked(page, "record") == in_text > 2

        await add_field(page, "title")
        await click_in_frame(page, "p a")
        assert await page.locator(".field.active .field-css").input_value() == "a"
        await add_processor(page, "regex", r"^(.*) \(", "1")
        await page.locator(".field.active .field-required").check()
        await add_field(page, "rel")  # some links have no rel: null in their items
        await click_in_frame(page, "p a[rel]")
        await page.locator(".field.active .field-attr").select_option("rel")
        await add_field(page, "url")
        await click_in_frame(page, "p a")
        await page.locator(".field.active .field-attr").select_option("href")
        await add_processor(page, "absolute_url")

        await page.click("#add-link")  # follow the links in the text only
        await click_in_frame(page, "p a")
        await click_in_frame(page, "nav a")
        assert await page.locator(".link.active .link-css").input_value() == "p a"

        await page.check("#preview-wide")  # the other sites' home pages: widened on purpose
        await page.click("#preview")
        await page.locator("#preview-results").wait_for()
        text = await page.locator("#preview-results").inner_text()
        assert "site0.test" in text and "another page" in text  # other home pages
        assert await page.locator("#problems li").count() == 0
        await page.fill("#doc-name", "testweb.toml")
        await shot(page)
        await page.click("#save")
        await page.get_by_text("saved testweb.toml").wait_for()

        # A single field on a section page, into the same document.
        section = await page.evaluate(
            "() => document.getElementById('page-frame').contentDocument"
            ".querySelector('p a').getAttribute('data-g-href')"
        )
        await page.goto(f"{served.base}/editor/")
        await page.wait_for_selector("body[data-started]")
        target = section if section.startswith("http") else home + section.lstrip("/")
        await fetch_sample(page, target)
        await page.fill("#rule-name", "page")
        await page.fill(
            "#rule-url", r"^http://site\d+\.test(:\d+)?/(news|docs|blog|shop|~staff)/[a-z]+-\d+/$"
        )
        await add_field(page, "title")
        await click_in_frame(page, "h1")
        assert await page.locator(".field.active .field-css").input_value() == "h1"
        assert await marked(page, "match") == 1
        await add_processor(page, "regex", r"^(.*) \(", "1")
        await page.click("#preview")
        await page.locator("#preview-results").wait_for()
        await page.fill("#doc-name", "testweb.toml")
        await page.click("#save")
        await page.get_by_text("saved testweb.toml").wait_for()

        # The document opens again: its rules, their fields and samples; saved unchanged.
        await page.goto(f"{served.base}/editor/")
        await page.wait_for_selector("body[data-started]")
        await page.select_option("#doc-list", "testweb.toml")
        await page.locator("#doc-rules option").nth(1).wait_for(state="attached")
        await page.select_option("#doc-rules", label="home")
        await page.click("#open")
        await page.wait_for_function("() => document.body.dataset.ready")
        assert await page.input_value("#record-css") == "p a"
        assert await page.locator(".field .field-name").count() == 3
        assert await page.locator(".link .link-css").input_value() == "p a"
        await page.click("#preview")
        await page.locator("#preview-results").wait_for()
        pages_shown = (
            "() => [...document.querySelectorAll('#preview-results td[title]')].map(t => t.title)"
        )
        narrow = await page.evaluate(pages_shown)
        assert narrow and all(url.startswith(home) for url in narrow)  # the sample's origin only
        await page.check("#preview-wide")
        await page.click("#preview")
        await page.wait_for_function(f"() => ({pages_shown})().some(u => u.includes('site1.test'))")
        await page.locator("#preview-results").wait_for()
        assert await page.locator("#preview-results").inner_text() == text  # as before saving
        assert await page.locator("#problems li").count() == 0
        before = (rules_dir / "testweb.toml").read_text()
        await page.click("#save")
        await page.get_by_text("saved testweb.toml").wait_for()
        assert (rules_dir / "testweb.toml").read_text() == before
        await page.close()

        saved = rules_dir / "testweb.toml"
        code, out, err = await output("rules", "check", str(saved))
        assert code == 0, err
        code, out, err = await output("rules", "test", str(rules_dir))
        assert code == 0, out + err
        assert "2 samples passed, 0 failed" in out

        out_dir = tmp_path / "crawl"
        crawl = ["crawl", home, "--rules", str(saved), "--out", str(out_dir), *WEB_ARGS]
        code, out, err = await output(*crawl, "--max-pages", "60")
        assert code == 0, err
    items = [json.loads(line) for line in (out_dir / "items.jsonl").read_text().splitlines()]
    homes = [i for i in items if i["rule"] == "home" and i["url"] == home]
    body = (rules_dir / "samples" / "testweb-home-1.html").read_bytes()
    links = LexborHTMLParser(body.decode()).css("p a")
    assert [i["fields"]["title"] for i in homes] == [a.text().rsplit(" (", 1)[0] for a in links]
    assert [i["fields"]["rel"] for i in homes] == [a.attributes.get("rel") for a in links]
    assert None in [i["fields"]["rel"] for i in homes]
    pages = [i for i in items if i["rule"] == "page"]
    assert pages and all(i["fields"]["title"] for i in pages)
    expected = json.loads((rules_dir / "samples" / "testweb-home-1.json").read_text())
    assert expected["links"] and len(expected["links"]) <= len(links)  # the text's only
    assert home not in expected["links"]  # the nav link to itself is not followed


async def shot(page: Page) -> None:
    if SHOTS:
        await page.screenshot(path=str(Path(SHOTS) / "ui-editor.png"), full_page=True)


HOSTILE = """<!DOCTYPE html><html><head>
<meta http-equiv="refresh" content="0;url=/log/refresh">
<base href="/log/base/">
<link rel="stylesheet" href="/log/link.css">
<script>window.top.pwned = 'script'; fetch('/log/script');</script>
<style>body { background: url('/log/style'); }</style>
<style>.x { width: expression(alert(1)); background: url(javascript:top.pwned='css') }</style>
</head>
<body onload="window.top.pwned='onload'">
<h1 class="title" onclick="window.top.pwned='onclick'"
  onmouseover="window.top.pwned='over'">Hostile</h1>
<a class="go" href="javascript:window.top.pwned='link'">a javascript: link</a>
<a class="data" href="data:text/html,<script>top.pwned='data'</script>">a data: link</a>
<img src="/log/img" onerror="window.top.pwned='img'" alt="image">
<img src="x" onerror="window.top.pwned='onerror'">
<svg><script>window.top.pwned='svg'</script><circle onload="top.pwned='svg2'"/></svg>
<iframe src="/log/iframe"></iframe>
<iframe srcdoc="<script>top.pwned='srcdoc'</script>"></iframe>
<object data="/log/object"></object><embed src="/log/embed">
<form action="/log/form"><input name="q" value="x" autofocus onfocus="top.pwned='focus'">
<button>go</button></form>
<div style="background-image: url(/log/div)" class="item">styled</div>
<p class="item">An <b>item</b> with <a href="/log/anchor">a link</a>.</p>
<template><script>top.pwned='template'</script></template>
<noscript><img src="/log/noscript"></noscript>
<math><mi xlink:href="javascript:top.pwned='math'">x</mi></math>
</body></html>"""


async def test_a_hostile_sample_page_runs_nothing(browser: Browser, tmp_path: Path) -> None:
    hits: list[str] = []

    async def hostile(request: web.Request) -> web.Response:
        return web.Response(text=HOSTILE, content_type="text/html")

    async def logged(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="logged")

    app = web.Application()
    app.router.add_get("/hostile", hostile)
    app.router.add_route("*", "/log/{tail:.*}", logged)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with editor(tmp_path, ["127.0.0.1"]) as served:
            page = await new_page(browser)
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            await open_editor(page, served)
            await fetch_sample(page, f"http://127.0.0.1:{port}/hostile")
            await add_field(page, "title")
            for selector in ("h1", "a.go", "a.data", "p.item a", "div.item", "button", "input"):
                await click_in_frame(page, selector)
                await page.mouse.move(10, 10)
            await page.keyboard.press("Tab")
            await page.keyboard.press("Enter")
            await asyncio.sleep(0.3)  # give anything that would run the time to run
            assert await page.evaluate("() => window.pwned === undefined")
            assert await page.locator(".field.active .field-css").input_value()
            frame = page.frame_locator("#page-frame")
            assert await frame.locator("script, iframe, object, embed, svg, meta").count() == 0
            assert await frame.locator("[onclick], [onerror], [onload], [href], [src]").count() == 0
            await page.close()
    finally:
        await runner.cleanup()
    assert hits == []
    assert not [u for u in requests if f":{port}/" in u]


SHOP = """<!DOCTYPE html><html><head><title>Shop</title></head><body>
<div class="list"><div class="card item"><h3 class="name">Tea</h3><b class="price">3</b></div>
<div class="card item ad"><h3 class="name">Buy this</h3></div>
<div class="card item"><h3 class="name">Cup</h3><b class="price">5</b></div>
<div class="card item"><h3 class="name">Pot</h3></div></div>
<div class="card side"><h3 class="name">Elsewhere</h3></div>
</body></html>"""


async def test_selectors_generalise_by_classes_and_refine_with_not(
    browser: Browser, tmp_path: Path
) -> None:
    async def shop(request: web.Request) -> web.Response:
        return web.Response(text=SHOP, content_type="text/html")

    app = web.Application()
    app.router.add_get("/shop/{n}", shop)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with editor(tmp_path, ["127.0.0.1"], robots=False) as served:
            page = await new_page(browser)
            await open_editor(page, served)
            await fetch_sample(page, f"{base}/shop/1")
            port = runner.addresses[0][1]
            assert await page.input_value("#rule-url") == rf"^http://127\.0\.0\.1:{port}/shop/\d+$"
            await page.click("#pick-record")
            await click_in_frame(page, "div.item h3", 0)  # a click lands on the innermost
            assert await page.input_value("#record-css") == "h3.name"
            await page.click("#pick-parent")  # widened to its container
            assert await page.input_value("#record-css") == "div.card.item"
            assert await marked(page, "record") == 4
            await click_in_frame(page, "div.ad h3")  # inside a highlighted one: rejects it
            assert await page.input_value("#record-css") == "div.card.item:not(.ad)"
            assert await marked(page, "record") == 3
            await add_field(page, "price")  # missing from one container: null there
            await click_in_frame(page, "b.price")
            assert await page.locator(".field.active .field-css").input_value() == "b.price"
            await add_processor(page, "int")
            await add_field(page, "name")
            await click_in_frame(page, "div.item h3")
            assert await page.locator(".field.active .field-css").input_value() == "h3.name"
            await page.click("#preview")
            await page.locator("#preview-results").wait_for()
            text = await page.locator("#preview-results").inner_text()
            assert "Tea" in text and "Pot" in text and "Buy this" not in text
            assert "Elsewhere" not in text and "null" in text
            await page.close()
    finally:
        await runner.cleanup()
