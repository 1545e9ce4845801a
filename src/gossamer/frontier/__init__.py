"""The frontier: what to crawl next, when, and whether robots.txt allows it.

``base`` holds the contract every backend fulfils (``Frontier``, ``Candidate``, ``Lease``) and
what ``lease()`` may do. A URL enters through ``admission`` (canonicalized once, scoped,
fingerprinted), is checked against the URL-seen set (``dedup`` in the embedded frontier, the
job's Redis set in the cluster) and is queued per host in the shared, synchronous ``hosts``
scheduler. It coordinates parts that each own one concern: ``hostqueue`` (each host's URLs
in memory, in storage and waiting for a time), ``ready`` (the heap of hosts with a free
politeness slot, ``politeness`` deciding when, ``domains`` holding back the hosts of a
registrable domain with all its share in flight), ``workingset`` (which hosts are scheduled at
all, a registrable domain's hosts at most a share of them), ``robotstage`` (what a due
host's URLs go out as: a host's URLs wait until its robots.txt rules, ``robots``, are
known), ``taker`` (which of them go out as pages: those
the rules forbid as ``blocked``, new ones past a host's page budget, ``budgets``, as
``budget``), ``leases`` (the lease table), ``bestfirst`` (the order across hosts once a
priority arrives), ``rounds`` (what it hands out) and ``slotclaims`` (the slots requests
outside the leases take, through the host gate, ``gate``). Two backends keep only their
storage around the scheduler: ``local`` (the embedded frontier, its write-ahead log in
crawl.db) and ``redis``, a package (one job's URLs in partitioned Redis queues shared by many
workers: key layout, scripts, adds, claims, the shared host limiter, hand-over fences, the
contract's methods; its Lua scripts in ``redis/lua/``).
A continuous crawl (``--recrawl``) adds ``revisits`` (each fetched page's revisit state in
crawl.db, the URLs due read back to the embedded frontier, and the early revisits that fill
the slots of hosts ``idle`` finds free), and ``revisit`` (the interval policy, pure).

This package may import the standard library, numpy (the seen set), protego, redis, xxhash,
``gossamer.crawldb`` (the embedded frontier's storage), ``gossamer.logs``, ``gossamer.retry``,
``gossamer.outcomes`` (what counts as a host's failure), ``gossamer.redact`` (a seed's user
name alone as entries mask it), ``gossamer.settings`` (the default focus slack),
``gossamer.addresses`` (a host's registrable domain), ``gossamer.urls`` and
``gossamer.tracking`` (the parameters admission strips); never the engine, the fetcher,
the sinks or the cluster, which hands the Redis frontier its partitions as a value
(``Ownership``) and runs its upkeep.
"""
