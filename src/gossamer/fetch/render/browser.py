"""The browser pool: one headless Chromium (Debian's ``chromium-headless-shell``) driven by
Playwright, shared by every render, restarted after ``restart_pages`` pages, past a memory
budget or after a crash.

Playwright is imported when the pool starts, never before: a crawl without ``--render`` does
not load it. The browser is launched through a small wrapper script that writes its process
id (so the pool can measure the browser's process tree with psutil) and, with ``setpriv``,
asks the kernel to kill it when its parent (Playwright's driver) dies: after a ``kill -9`` of
the crawler the driver sees its pipe close and exits, and the browser follows it.

Every launch resolves no host name but loopback (``--host-resolver-rules``): the pool fulfils
each request itself (see :mod:`gossamer.fetch.render.page`), so the browser never needs to.
Every launch also runs behind the pool's refusing proxy and with WebRTC kept off UDP, so what
the router does not fulfil has nowhere to go (see :mod:`gossamer.fetch.render.barrier`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil  # type: ignore[import-untyped]

from gossamer.fetch.render.barrier import RefusingProxy

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

log = logging.getLogger(__name__)

BROWSER_ARGS = (
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--mute-audio",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
"""Every launch's flags: no name resolves but loopback, no background traffic, no WebRTC
datagrams (the refusing proxy's flags are added at launch)."""
_SAMPLE_SECONDS = 1.0
_CLOSE_SECONDS = 10.0


class RenderUnavailable(RuntimeError):
    """Rendering cannot run here: Playwright is not importable or the browser is missing."""


@dataclass(frozen=True, slots=True)
class BrowserConfig:
    """How the browser is launched and when it is replaced."""

    executable: Path = Path("/usr/bin/chromium-headless-shell")
    js_heap_mb: int = 512
    restart_pages: int = 500
    memory_mb: int = 2048
    extra_args: tuple[str, ...] = ()


def check_available(executable: Path) -> None:
    """Raise :class:`RenderUnavailable` (with what to install) unless Playwright imports and
    ``executable`` is a program."""
    try:
        import playwright.async_api  # noqa: F401
    except (ImportError, ValueError) as exc:
        raise RenderUnavailable(
            f"rendering needs Playwright for Python ({exc}); install gossamer's render extra: "
            "pip install 'gossamer[render]'"
        ) from None
    if not (executable.is_file() and os.access(executable, os.X_OK)):
        raise RenderUnavailable(
            f"rendering needs Chromium's headless shell at {executable} (apt-get install "
            "chromium-headless-shell, or set render_browser); no browser is downloaded"
        )


def default_concurrency(memory_per_page_mb: int = 400) -> int:
    """Renders at once: two per core (a render mostly waits for its page to settle; measured
    in benchmarks/bench_render.py), at most 16, as far as the memory available holds them at
    ``memory_per_page_mb`` each."""
    cores = os.cpu_count() or 1
    free_mb = psutil.virtual_memory().available // (1024 * 1024)
    return max(1, min(2 * cores, 16, int(free_mb // memory_per_page_mb)))


def real_binary(executable: Path) -> Path:
    """The program behind a launcher script (Debian's ``/usr/bin/chromium-headless-shell``
    runs ``/usr/lib/chromium/chromium-headless-shell`` as a child, which a parent-death
    signal would not reach); ``executable`` itself otherwise."""
    try:
        with executable.open("rb") as file:
            head = file.read(4096)
    except OSError:
        return executable
    if not head.startswith(b"#!") or b"\0" in head:
        return executable
    for line in head.decode("utf-8", "replace").splitlines()[1:]:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for word in words:
            path = Path(word)
            if path.is_absolute() and path.is_file() and os.access(path, os.X_OK):
                return path
    return executable


def _wrapper(directory: Path, binary: Path) -> Path:
    """A launcher that records the browser's pid and ties the browser's life to its parent."""
    setpriv = shutil.which("setpriv")
    tie = f"{shlex.quote(setpriv)} --pdeathsig KILL -- " if setpriv else ""
    script = directory / "chromium"
    script.write_text(
        '#!/bin/sh\necho $$ > "$GOSSAMER_BROWSER_PIDFILE"\n'
        f'exec {tie}{shlex.quote(str(binary))} "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o700)
    return script


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and its descendants (0 once it is gone)."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            total += process.memory_info().rss
    return total


class _Generation:
    """One launched browser and the renders using it."""

    def __init__(self, browser: Browser, pid: int | None, number: int) -> None:
        self.browser = browser
        self.pid = pid
        self.created: float | None = None
        """The browser process's start time: its pid is only killed while it still names it."""
        if pid is not None:
            with contextlib.suppress(psutil.Error):
                self.created = psutil.Process(pid).create_time()
        self.number = number
        self.active = 0
        self.pages = 0
        self.retiring = False
        self.dead = False
        self.idle = asyncio.Event()
        self.idle.set()


class BrowserPool:
    """Hands out fresh browser contexts (one per page) at most ``concurrency`` at a time,
    over one browser that is replaced when it has served ``restart_pages`` pages, holds more
    than ``memory_mb`` or has crashed (the renders in flight on a crashed browser fail)."""

    def __init__(self, config: BrowserConfig, concurrency: int) -> None:
        self._config = config
        self._slots = asyncio.Semaphore(concurrency)
        self.concurrency = concurrency
        self._playwright: Playwright | None = None
        self._current: _Generation | None = None
        self._launching = asyncio.Lock()
        self._closing: set[asyncio.Task[None]] = set()
        self._dir: Path | None = None
        self._sampler: asyncio.Task[None] | None = None
        self._generations = 0
        self.restarts = 0
        self.crashes = 0
        self.rss_bytes = 0
        self.peak_rss_bytes = 0
        self._closed = False
        self._proxy = RefusingProxy()

    async def start(self) -> None:
        """Start Playwright's driver and launch the browser (once; raises RenderUnavailable
        when it cannot)."""
        if self._playwright is not None:
            return
        check_available(self._config.executable)
        from playwright.async_api import async_playwright

        self._proxy.open()
        self._dir = Path(tempfile.mkdtemp(prefix="gossamer-browser-"))
        self._playwright = await async_playwright().start()
        await self._generation()
        self._sampler = asyncio.create_task(self._sample())

    async def close(self) -> None:
        """Close every browser and the driver; no browser process outlives this."""
        self._closed = True
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
        current, self._current = self._current, None
        if current is not None:
            await self._shut(current)
        for task in list(self._closing):
            with contextlib.suppress(Exception):
                await task
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._proxy.close()

    @property
    def browser_pid(self) -> int | None:
        """The current browser's process id (None before the first launch)."""
        return None if self._current is None else self._current.pid

    @contextlib.asynccontextmanager
    async def context(self, **options: Any) -> AsyncIterator[BrowserContext]:
        """A fresh browser context for one page, within the pool's concurrency; closed on
        exit. Raises playwright's Error when the browser dies meanwhile."""
        async with self._slots:
            generation = await self._generation()
            generation.active += 1
            generation.idle.clear()
            try:
                context = await generation.browser.new_context(**options)
                try:
                    yield context
                finally:
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(_CLOSE_SECONDS):
                            await context.close()
            finally:
                generation.active -= 1
                generation.pages += 1
                if generation.active == 0:
                    generation.idle.set()
                self._maybe_retire(generation)

    async def _generation(self) -> _Generation:
        current = self._current
        if current is not None and not current.dead and not current.retiring:
            return current
        async with self._launching:
            current = self._current
            if current is not None and not current.dead and not current.retiring:
                return current
            if self._closed:
                raise RuntimeError("the browser pool is closed")
            if current is not None:
                self._retire(current)
            self._current = await self._launch()
            return self._current

    async def _launch(self) -> _Generation:
        assert self._playwright is not None and self._dir is not None
        self._generations += 1
        pidfile = self._dir / f"pid-{self._generations}"
        config = self._config
        browser = await self._playwright.chromium.launch(
            executable_path=_wrapper(self._dir, real_binary(config.executable)),
            args=[
                *BROWSER_ARGS,
                *self._proxy.args,
                f"--js-flags=--max-old-space-size={config.js_heap_mb}",
                *config.extra_args,
            ],
            env={**os.environ, "GOSSAMER_BROWSER_PIDFILE": str(pidfile)},
            handle_sigint=False,
            handle_sigterm=False,
            handle_sighup=False,
        )
        pid = None
        with contextlib.suppress(OSError, ValueError):
            pid = int(pidfile.read_text().strip())
        generation = _Generation(browser, pid, self._generations)
        browser.on("disconnected", lambda _: self._disconnected(generation))
        log.info("browser %d started (pid %s)", generation.number, pid)
        return generation

    def _disconnected(self, generation: _Generation) -> None:
        if generation.dead:
            return
        generation.dead = True
        if not generation.retiring and not self._closed:
            self.crashes += 1
            log.warning(
                "browser %d (pid %s) died; %d renders in flight fail and are retried",
                generation.number,
                generation.pid,
                generation.active,
            )

    def _maybe_retire(self, generation: _Generation) -> None:
        if generation.retiring or generation.dead or generation is not self._current:
            return
        config = self._config
        if generation.pages >= config.restart_pages:
            log.info("browser %d served %d pages; restarting", generation.number, generation.pages)
            self._retire(generation)
        elif self.rss_bytes > config.memory_mb * 1024 * 1024:
            log.info(
                "browser %d holds %d MiB (budget %d); restarting",
                generation.number,
                self.rss_bytes >> 20,
                config.memory_mb,
            )
            self._retire(generation)

    def _retire(self, generation: _Generation) -> None:
        """Replace ``generation``: new renders get a new browser; it closes once idle."""
        if generation.retiring:
            return
        generation.retiring = True
        if not generation.dead:
            self.restarts += 1
        if self._current is generation:
            self._current = None
        task = asyncio.create_task(self._shut_when_idle(generation))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _shut_when_idle(self, generation: _Generation) -> None:
        await generation.idle.wait()
        await self._shut(generation)

    async def _shut(self, generation: _Generation) -> None:
        generation.retiring = True
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_CLOSE_SECONDS):
                await generation.browser.close()
        if generation.pid is not None and generation.created is not None:
            _kill_tree(generation.pid, generation.created)

    async def _sample(self) -> None:
        """Measure the browser tree's memory every second (for the budget and the stats)."""
        while True:
            current = self._current
            if current is not None and current.pid is not None and not current.dead:
                self.rss_bytes = tree_rss(current.pid)
                self.peak_rss_bytes = max(self.peak_rss_bytes, self.rss_bytes)
                self._maybe_retire(current)
            await asyncio.sleep(_SAMPLE_SECONDS)


def _kill_tree(pid: int, created: float) -> None:
    """Kill what is left of a closed browser's process tree (unless ``pid`` is another
    process's by now)."""
    try:
        root = psutil.Process(pid)
        if root.create_time() != created:
            return
        processes = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.kill()
