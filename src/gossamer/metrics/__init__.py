"""The Prometheus exporter a crawl and a worker serve: ``/metrics`` and ``/healthz`` of one
crawl process (``exporter``), behind a ``Host`` check against DNS rebinding (``hostcheck``),
its server's log quiet about requests that are no HTTP (``serverlog``, the dashboard's too).

It reads the stages' frozen ``stats()`` snapshots only; ``gossamer crawl`` and a cluster
worker start it, the dashboard (``gossamer.ui``) does not need it. A cluster job's view is
``gossamer.cluster.metrics``, built on this package.

This package may import ``gossamer.engine`` (the loop's state), ``gossamer.fetch``,
``gossamer.stats``, ``gossamer.settings`` and the helpers, never ``gossamer.crawl``,
``gossamer.cluster`` or ``gossamer.ui`` (which import it).
"""
