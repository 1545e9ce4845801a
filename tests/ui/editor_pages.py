"""Helpers of the rule editor's browser tests: an editor served in-process, clicks inside
its script-less frame (the page reads them through its overlay, as a user's clicks)."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from playwright.async_api import Page
from tests.ui.server import Served, dashboard

from gossamer.ui.cli import editor_app, editor_options


def options(
    rules_dir: Path | None, allow: list[str], resolve: list[str] | None = None, **more: Any
) -> Any:
    """The editor's options as ``gossamer ui`` parses them."""
    given = {
        "resolve": resolve or [],
        "robots": True,
        "user_agent": None,
        "config": None,
        "editor_allow": allow,
        "rules_dir": rules_dir,
    }
    return editor_options(argparse.Namespace(**(given | more)))


@asynccontextmanager
async def editor(
    rules_dir: Path | None, allow: list[str], resolve: list[str] | None = None, **more: Any
) -> AsyncIterator[Served]:
    """The UI with the real editor mounted (``more``: options such as ``render``)."""
    chosen = options(rules_dir, allow, resolve, **more)
    async with dashboard([rules_dir or Path()], editor=lambda port: editor_app(chosen, port)) as s:
        yield s


async def open_editor(page: Page, served: Served) -> None:
    await page.goto(served.login_url)
    await page.goto(f"{served.base}/editor/")
    await page.wait_for_selector("body[data-started]")


async def fetch_sample(page: Page, url: str) -> None:
    before = await page.evaluate("() => document.body.dataset.ready || ''")
    await page.fill("#sample-url", url)
    await page.click("#fetch")
    await page.wait_for_function(
        "b => document.body.dataset.ready && document.body.dataset.ready !== b", arg=before
    )


async def click_in_frame(page: Page, selector: str, nth: int = 0) -> None:
    """Click the ``nth`` element ``selector`` matches in the sample page, as a user would:
    the mouse at its centre (over the editor's overlay)."""
    point = await page.evaluate(
        """([selector, nth]) => {
            const frame = document.getElementById('page-frame');
            const node = frame.contentDocument.querySelectorAll(selector)[nth];
            node.scrollIntoView({block: 'center'});
            const f = frame.getBoundingClientRect();
            const r = node.getClientRects()[0];
            return {x: f.left + r.left + Math.min(r.width / 2, 8), y: f.top + r.top + r.height / 2};
        }""",
        [selector, nth],
    )
    await page.mouse.click(point["x"], point["y"])


async def marked(page: Page, mark: str) -> int:
    """How many elements of the sample page carry the editor's mark (match, pos, neg)."""
    return int(
        await page.evaluate(
            "m => document.getElementById('page-frame').contentDocument"
            ".querySelectorAll(`[data-g-${m}]`).length",
            mark,
        )
    )
