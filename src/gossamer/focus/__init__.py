"""Focused (topical) crawling: the topic, link scoring and online learning, the focus policy.

``text`` turns text into terms (lower-cased words, stop words out, a light stemmer) and keeps
the crawl's document frequencies; ``topic`` builds the topic from a phrase and example pages
and judges a page's main text (``relevance``, 0..1, calibrated so that on-topic pages land
above 0.5); ``anchors`` reads each outlink's anchor text, the text around it and the list
holding it from the parsed tree; ``linkfeatures`` turns a link into the scorer's features and
a prior; ``learner`` is the online link scorer (logistic regression on hashed features,
trained as pages are judged); ``paths`` counts where on-topic pages were found, ``lists``
in which lists of which pages, ``citations`` calibrates what the pages citing a URL say of
it, ``calibration`` what its place and its lists say; ``policy``
ties them together for the engine: it judges pages, sets the priority of outlinks, drops
links in ``hard`` mode, re-scores the URLs waiting in the frontier, explores within a share
and keeps the harvest-rate statistics; ``examples`` fetches the example pages before the
crawl; ``shared`` exchanges what a cluster's workers learn through the job's Redis stream.
Nothing of these is imported by a crawl without focus settings.

The content digests every crawl keeps are :mod:`gossamer.digests`, not part of this package.

This package may import the standard library, numpy, msgspec, selectolax, redis (``shared``),
`gossamer.parse`, `gossamer.extract`, `gossamer.frontier.base`, `gossamer.frontier.robots`,
`gossamer.urls`, `gossamer.redact` (``shared``) and `gossamer.crawldb`; nothing
above the stages (engine, crawl wiring, cluster, cli), which build its objects and hand them
to the engine.
"""
