"""Content digests, a stage of every crawl: exact and near duplicates of a page's main text.

``base`` holds the contract (:class:`~gossamer.digests.base.DigestIndex`: which URL had this
content first, answered and remembered in one atomic step), the digest of a text (xxh3 exact
hash, SimHash from ``simhash``) and the banding that finds near duplicates. Two backends keep
the index: ``local`` (an embedded crawl's, in memory with its first URLs in crawl.db) and
``redis`` (a cluster job's, shared by every worker, checked and filled by one Lua script in
``lua/``).

This package may import the standard library, numpy (``simhash``, lazily), redis, xxhash and
``gossamer.crawldb`` (where an embedded crawl keeps its digests),
``gossamer.frontier.redis.scripts`` (the Lua script runner its Redis index shares) and
``gossamer.parse.native`` (which of gossamer's C parts run: ``simhash``'s); it knows
no other stage, and nothing above the stages (engine, crawl wiring, cluster, cli), which
build its objects and hand them to the engine.
"""
