"""gossamer: a distributed web crawler.

The package in layers, lowest first; a module imports from its own layer and lower ones only,
and no two modules import each other, directly or not (``tests/test_layers.py`` checks both):

- values and helpers: ``urls``, ``redact``, ``safe``, ``errors``, ``retry``, ``stats``,
  ``outcomes``, ``crawldb``, ``logs``, ``progress``; ``settings`` (the typed models) and
  ``flags`` (their command-line flags);
- the stages, each a package with its contract: ``parse``, ``extract``, ``fetch``,
  ``frontier``, ``sinks``, ``hooks``, and ``page`` (what is done with a fetched page, over
  parse, extract and hooks); and ``balance`` (cluster load balancing) and ``testweb``
  (the test web), which stand apart;
- ``engine``: the crawl loop, over the stages' contracts only, with ``ledger`` (records on
  their way to the sinks) and ``robots_fetch`` (the fetch robots.txt is asked through);
- ``crawl``: the one wiring place, building every stage from the settings;
- ``cluster``: workers and the control plane, built on ``crawl``;
- ``cli``: the ``gossamer`` command.
"""

__version__ = "0.1.0"
