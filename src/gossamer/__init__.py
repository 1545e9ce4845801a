"""gossamer: a distributed web crawler.

The package in layers, lowest first; a module imports from its own layer and lower ones only,
no two modules import each other, directly or not, and neither do two packages, not even for
a type (``tests/test_layers.py`` checks all three and that every package has its layer):

- values and helpers: ``urls``, ``redact``, ``safe``, ``errors``, ``retry``, ``stats``,
  ``outcomes``, ``crawldb``, ``tls``, ``usercode`` (``module:function`` loading),
  ``proxyurl``, ``logs``, ``progress``; ``settings`` (the typed models) and ``flags`` (their
  command-line flags);
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
- ``ui``: the dashboard and the rule editor, reading crawls and jobs;
- ``cli``: the ``gossamer`` command.
"""

__version__ = "0.1.0"
