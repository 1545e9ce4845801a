"""The web dashboard, ``gossamer ui``: the crawls of output folders and the jobs of a Redis,
live, behind a token: the application and its routes (``app``), the token, CSRF and header
middlewares (``security``), crawls read from their output folders (``crawls``: crawl.db
read-only, stats.json, status.json, crawl.log), cluster jobs read from Redis (``jobs``), the
``gossamer ui`` command (``cli``) and the page's files (``static/``).

It only reads what crawls write; its one state change is a cluster job's pause, resume or
stop. This package may import ``gossamer.cluster`` (the control plane and ``jobs``),
``gossamer.logs``, ``gossamer.redact``, ``gossamer.settings`` and ``gossamer.errors``; never
``gossamer.engine`` or ``gossamer.crawl``, and nothing imports it but ``gossamer.cli``.
"""
