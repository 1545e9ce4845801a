"""Focused (topical) crawling and content digests, P3.

``text`` turns text into terms (lower-cased words, stop words out, a light stemmer) and keeps
the crawl's document frequencies; ``topic`` builds the topic from a phrase and example pages
and judges a page's main text (``relevance``, 0..1, calibrated so that on-topic pages land
above 0.5); ``anchors`` reads each outlink's anchor text and the text around it from the parsed
tree; ``learner`` is the online link scorer (logistic regression on hashed features, trained
as pages are judged); ``policy`` ties them together for the engine: it judges pages, sets the
priority of outlinks, drops links in ``hard`` mode, re-scores the URLs waiting in the frontier
and keeps the harvest-rate statistics; ``examples`` fetches the example pages before the crawl.
Nothing of these is imported by a crawl without focus settings.

``digests`` holds the content digests every crawl keeps (SimHash and exact hashes of a page's
main text, the in-memory index of an embedded crawl); ``digests_redis`` the job's index in
Redis, checked and filled by one Lua script in ``lua/``, shared by every worker.

This package may import the standard library, numpy, selectolax, redis, xxhash,
`gossamer.parse`, `gossamer.extract`, `gossamer.frontier.base`, `gossamer.frontier.robots`,
`gossamer.urls` and `gossamer.crawldb` (where an embedded crawl keeps its digests); nothing
above the stages (engine, crawl wiring, cluster, cli), which build its objects and hand them
to the engine.
"""
