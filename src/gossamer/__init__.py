"""gossamer: a distributed web crawler.

The public Python API, importable from here (everything else in the package is private: its
names may change in any release)::

    import gossamer

    stats = gossamer.run("https://example.org/", out="example", max_pages=50)

- running a crawl: :class:`Crawl` (async: start, stream its records, stop, resume),
  :func:`run` (blocking: a crawl to its end, its figures), :class:`RecordStream` (records as
  they are written);
- a cluster: :class:`Worker` (a worker of a job at a Redis URL, told more with a
  :class:`WorkerOptions`), :func:`submit` (a job) and
  :func:`job_status` (its state);
- page handlers by URL pattern: :class:`Handlers`, what a handler sees (:class:`Page`) and
  gives (items: mappings; :class:`Link`), :data:`Handler`, :data:`HandlerOutput`;
- the typed settings: :class:`CrawlSettings`, :class:`JobSettings`, :func:`load_settings`
  (TOML, environment, as the command reads them), :class:`SettingsError`;
- what a crawl gives: :class:`PageRecord` (one per URL), :class:`Item` (an item in a record's
  ``found``), :class:`CrawlStats` (the figures);
- ``__version__``.

These names are loaded on first use, so ``import gossamer`` stays cheap (the ``gossamer``
command and every module of the package import it first). ``docs/api.md`` is the guide.

The package in layers, lowest first; a module imports from its own layer and lower ones only,
no two modules import each other, directly or not, and neither do two packages, not even for
a type (``tests/test_layers.py`` checks all three and that every package has its layer):

- values and helpers: ``addresses`` (IP literals), ``urls``, ``tracking`` (``--strip-params``),
  ``redact``, ``safe``,
  ``errors``, ``retry``, ``stats``, ``outcomes``, ``crawldb``, ``tls``, ``usercode``
  (``module:function`` loading), ``proxyurl``, ``logs``, ``progress``; ``settings`` (the
  typed models) and ``flags`` (their command-line flags);
- the stages, each a package with its contract: ``parse``, ``extract``, ``fetch``,
  ``frontier``, ``sinks``, ``hooks``, ``digests``, ``focus``, ``discover`` (sitemaps and
  feeds), and ``page`` (what is done with
  a fetched page, over parse, extract, hooks and digests); and ``balance`` (cluster load
  balancing) and ``testweb`` (the test web), which stand apart;
- ``engine``: the crawl loop, over the stages' contracts only, with ``ledger`` (records on
  their way to the sinks) and ``robots_fetch`` (the fetch robots.txt is asked through);
- what a running crawl reports: ``metrics`` (the Prometheus exporter) and ``status``
  (status.json);
- ``crawl``: the one wiring place, building every stage from the settings;
- ``cluster``: workers and the control plane, built on ``crawl``; ``rules_cli`` (``gossamer
  rules``), on the crawl's fetching;
- ``api``: the Python API above, over ``crawl`` and ``cluster``;
- ``ui``: the dashboard and the rule editor, reading crawls and jobs;
- ``cli``: the ``gossamer`` command, over ``api``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from gossamer.api import Crawl, RecordStream, Worker, job_status, run, submit
    from gossamer.cluster.worker import WorkerOptions
    from gossamer.hooks import Handler, HandlerOutput, Link, Page
    from gossamer.page.handlers import Handlers
    from gossamer.settings import CrawlSettings, JobSettings, SettingsError, load_settings
    from gossamer.sinks.base import Item, PageRecord
    from gossamer.stats import CrawlStats

__all__ = [
    "Crawl",
    "CrawlSettings",
    "CrawlStats",
    "Handler",
    "HandlerOutput",
    "Handlers",
    "Item",
    "JobSettings",
    "Link",
    "Page",
    "PageRecord",
    "RecordStream",
    "SettingsError",
    "Worker",
    "WorkerOptions",
    "__version__",
    "job_status",
    "load_settings",
    "run",
    "submit",
]

_HOMES = {
    "gossamer.api": ("Crawl", "RecordStream", "Worker", "job_status", "run", "submit"),
    "gossamer.cluster.worker": ("WorkerOptions",),
    "gossamer.hooks": ("Handler", "HandlerOutput", "Link", "Page"),
    "gossamer.page.handlers": ("Handlers",),
    "gossamer.settings": ("CrawlSettings", "JobSettings", "SettingsError", "load_settings"),
    "gossamer.sinks.base": ("Item", "PageRecord"),
    "gossamer.stats": ("CrawlStats",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'gossamer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
