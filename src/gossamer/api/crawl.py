"""A crawl run from Python: :class:`Crawl` (async: records streamed, stopped, resumed) and
:func:`run` (the blocking convenience). The ``gossamer crawl`` command runs its crawl through
:class:`Crawl` too."""

from __future__ import annotations

import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from gossamer import eventloop
from gossamer.api.running import Running
from gossamer.crawl.additions import Additions
from gossamer.page.handlers import Handlers
from gossamer.settings import CrawlSettings, settings_to_dict, validate_model
from gossamer.stats import CrawlStats

S = TypeVar("S", bound=CrawlSettings)


class Crawl(Running):
    """One crawl on this machine (the embedded frontier, crawl.db in ``settings.out``), run in
    the caller's event loop::

        crawl = Crawl(CrawlSettings(seeds=["https://example.org/"], max_pages=100))

        @crawl.handler(r"/product/\\d+")
        def product(page: Page) -> Iterator[Item | Link]:
            yield {"name": page.title}

        async with crawl:
            async for record in crawl.records():
                print(record.url, record.status)
        print(crawl.stats())

    ``settings`` are checked as the command line's are (a bad value raises
    :class:`~gossamer.SettingsError`, naming the field). With ``resume=True`` the crawl
    continues from ``out/crawl.db`` as ``gossamer crawl --resume`` does. ``handlers`` adds
    page handlers registered elsewhere (:class:`~gossamer.Handlers`); ``signals``: SIGINT
    and SIGTERM stop the crawl gracefully (only in the main thread); ``progress``: the
    progress line on stderr (None: unless ``quiet``, when stderr is a terminal).
    """

    def __init__(
        self,
        settings: CrawlSettings,
        *,
        handlers: Handlers | None = None,
        signals: bool = False,
        progress: bool | None = False,
    ) -> None:
        super().__init__(handlers, signals)
        self.settings: CrawlSettings = checked(CrawlSettings, settings)
        """The crawl's settings, checked."""
        self._show_progress = progress

    def _progress(self) -> bool | None:
        return self._show_progress

    def _main(self, additions: Additions) -> Coroutine[Any, Any, CrawlStats]:
        from gossamer.crawl.run import run_crawl

        return run_crawl(self.settings, additions)


def checked(model: type[S], settings: S) -> S:
    """``settings`` converted and checked as settings from a file or flags are (a model built
    directly is not: see :mod:`gossamer.settings`)."""
    return validate_model(model, settings_to_dict(settings))


def run(
    *seeds: str,
    settings: CrawlSettings | None = None,
    handlers: Handlers | None = None,
    **fields: Any,
) -> CrawlStats:
    """Run a crawl to its end and return its figures (blocking: it runs its own event loop,
    so call it where no loop runs). ``seeds`` and ``fields`` (any :class:`CrawlSettings`
    field, e.g. ``out="crawl-out", max_pages=100, resume=True``) override ``settings``;
    in the main thread, SIGINT stops the crawl gracefully, as it stops ``gossamer crawl``::

        stats = gossamer.run("https://example.org/", out="example", max_pages=50)
        print(stats.pages, stats.errors)
    """
    base = settings_to_dict(settings if settings is not None else CrawlSettings())
    values: Mapping[str, Any] = base | fields | ({"seeds": list(seeds)} if seeds else {})
    main = threading.current_thread() is threading.main_thread()
    crawl = Crawl(validate_model(CrawlSettings, values), handlers=handlers, signals=main)
    return eventloop.run(crawl.run())
