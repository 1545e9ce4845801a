"""The wiring of a single-process crawl: the one place where objects are built from the
settings and handed their collaborators, and where a crawl is run.

* ``stages``: :class:`Stages`, the bundle of what every crawl process builds (data only),
  and :func:`open_stages`, which builds it, entering each resource on one exit stack the
  moment it is built (a failed start closes what was opened; a failing close skips no other);
* ``builders``: one function per resource outside the fetch stage (logins, rules,
  robots.txt, politeness, the worker pools, the engine's and page stage's configurations);
* ``fetching``: the fetch stage's builders (fetch settings, address guard, proxy pool,
  rendering middleware);
* ``outputs``: the output directory, crawl.db, pages.jsonl, items.jsonl, WARC, the store;
* ``sitemaps``: the sitemap stage, reading the sitemaps and feeds robots.txt names and
  ``--sitemap`` gives, their entries handed to admission;
* ``assembly``: a crawl put together over the stages and a frontier (stages started, the
  focus policy, the crawl loop, the figures ``/metrics`` reads), :func:`build_crawler` for
  the embedded frontier;
* ``revisiting``: a continuous crawl's (``--recrawl``) revisit state and bounds, and the
  fetcher that sends a revisit's validators;
* ``additions``: :class:`Additions`, what a Python program running a crawl adds to what its
  settings build (page handlers, record sinks, a callback handed the crawl loop);
* ``run``: :func:`run_crawl` (signals, ``--max-duration``, progress line, stats.json, the
  metrics server) and the end-of-crawl :func:`summary`.

The cluster worker builds on the same stages with its Redis frontier.

This package may import every stage package, ``gossamer.engine``, ``gossamer.page``,
``gossamer.metrics``, ``gossamer.status`` and the helpers below them; never
``gossamer.cluster``, ``gossamer.ui`` or ``gossamer.cli``, which build on it.
"""

from gossamer.crawl.additions import NOTHING, Additions
from gossamer.crawl.assembly import (
    assemble_crawler,
    build_crawler,
    focus_policy,
    metric_sources,
    start_stages,
)
from gossamer.crawl.builders import auth_logins, authenticator, load_ruleset, politeness_policy
from gossamer.crawl.fetching import (
    address_guard,
    check_given_sitemaps,
    check_proxies,
    check_rendering,
    in_scope,
    proxy_check_url,
    proxy_pool,
    rendering_fetcher,
    renders,
)
from gossamer.crawl.outputs import WORKER_ADVICE, prepare_out_dir, storage_errors
from gossamer.crawl.run import install_signal_handlers, run_crawl, stop_after, summary, tune_gc
from gossamer.crawl.stages import Stages, open_stages

__all__ = [
    "NOTHING",
    "WORKER_ADVICE",
    "Additions",
    "Stages",
    "address_guard",
    "assemble_crawler",
    "auth_logins",
    "authenticator",
    "build_crawler",
    "check_given_sitemaps",
    "check_proxies",
    "check_rendering",
    "focus_policy",
    "in_scope",
    "install_signal_handlers",
    "load_ruleset",
    "metric_sources",
    "open_stages",
    "politeness_policy",
    "prepare_out_dir",
    "proxy_check_url",
    "proxy_pool",
    "rendering_fetcher",
    "renders",
    "run_crawl",
    "start_stages",
    "stop_after",
    "storage_errors",
    "summary",
    "tune_gc",
]
