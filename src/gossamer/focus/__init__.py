"""P3's focused crawl: content digests shared by every worker (``digests``: SimHash and exact
hashes of a page's main text, the in-memory index of an embedded crawl; ``digests_redis``: the
job's index in Redis, checked and filled by one Lua script in ``lua/``).

This package may import the standard library, numpy, redis, xxhash and ``gossamer.crawldb``
(where an embedded crawl keeps its digests); never the engine, the crawl's wiring or the
cluster, which build its objects and hand them to the engine.
"""
