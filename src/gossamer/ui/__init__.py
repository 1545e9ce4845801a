"""The web side: the ``gossamer ui`` dashboard and its rule editor.

The dashboard shows the crawls of output folders and the jobs of a Redis, live, behind a
token: the application and its routes (``app``), the token, CSRF and header middlewares
(``security``), crawls read from their output folders (``crawls``: crawl.db read-only,
stats.json, status.json, crawl.log), cluster jobs read from Redis (``jobs``), the
``gossamer ui`` command (``cli``) and the page's files (``static/``). It only reads what crawls
write; its one state change is a cluster job's pause, resume or stop.
``editor`` is the rule editor mounted at ``/editor``: it fetches sample pages (through its own
address guard) and saves rule documents in ``--rules-dir``.

This package may import any gossamer module.
"""
