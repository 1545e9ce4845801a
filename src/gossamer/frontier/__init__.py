"""The frontier: what to crawl next, when, and whether robots.txt allows it.

``base`` holds the contract every backend fulfils (``Frontier``, ``Candidate``, ``Lease``) and
what ``lease()`` may do. A URL enters through ``admission`` (canonicalized once, scoped,
fingerprinted), is checked against the URL-seen set (``dedup`` in the embedded frontier, the
job's Redis set in the cluster) and is queued per host in the shared, synchronous ``hosts``
scheduler: ready heap of hosts, per-host queues by priority, politeness slots and delays
(``politeness``), retries, leases, the working set of active hosts and the robots.txt stage
(``robots``: a host's URLs wait until its rules are known). Two backends keep only their
storage around the scheduler: ``local`` (the embedded frontier, its write-ahead log in
crawl.db) and ``redis``, a package (one job's URLs in partitioned Redis queues shared by
many workers: key layout, scripts, claims, the shared host limiter, hand-over fences, the
contract's methods; its Lua scripts in ``redis/lua/``).

This package may import the standard library, numpy (the seen set), protego, redis, xxhash,
``gossamer.crawldb`` (the embedded frontier's storage), ``gossamer.logs``, ``gossamer.retry``,
``gossamer.outcomes`` (what counts as a host's failure),
``gossamer.settings`` (the default focus slack) and ``gossamer.urls``; never the engine, the
fetcher, the sinks or the cluster, which hands the Redis frontier its partitions as a value
(``Ownership``) and runs its upkeep.
"""
