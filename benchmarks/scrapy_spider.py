"""The Scrapy side of the crawl benchmark: a CrawlSpider following every in-scope ``<a href>``.

Runs in its own virtualenv (``benchmarks/.venv-scrapy``, see requirements-scrapy.txt)::

    python benchmarks/scrapy_spider.py --seeds-file seeds.txt --concurrency 64 --per-host 4 \
        --out result.json [--items items.jsonl]

With ``--items`` the spider does what a Scrapy user does to keep each page's main text: the
callback calls ``trafilatura.extract`` on the response and yields ``{url, text}``, and Scrapy's
feed export writes the items to a JSON lines file. Without it, it only counts pages.

Settings mirror gossamer's crawl: links marked rel=nofollow left (gossamer's default), the same
total and per-host concurrency (Scrapy's per-domain slot key is the URL's host name, here the
host's IP address), robots.txt obeyed, no delay, no depth limit, three retries, no cache, no
output but a count (and the feed with ``--items``). Pages answered 200 are counted in the
callbacks; the result file holds that count and Scrapy's own stats, and ``--urls`` lists the
pages (the benchmark compares them with gossamer's).

A Scrapy 2.19 quirk shows here: while a host's robots.txt is being fetched, requests to that
host wait on one Deferred through ``asFuture``, which consumes its result, so only the first
waiter gets the parser; the others get None ("no robots.txt") and may fetch a disallowed page.
The benchmark reports such pages instead of hiding them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
import trafilatura
from scrapy.crawler import CrawlerProcess
from scrapy.http import Request, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class BenchSpider(CrawlSpider):
    """Follows ``<a href>`` links within the seeds' hosts and counts the pages."""

    name = "bench"

    def __init__(self, seeds: list[str], text: bool = False, **kwargs: Any) -> None:
        self.start_urls = seeds
        self.text = text
        self.allowed_domains = sorted({urlsplit(url).hostname or "" for url in seeds})
        # LinkExtractor compares allow_domains with the netloc, port included; filtering
        # there is Scrapy's cheapest path. OffsiteMiddleware (allowed_domains) is the backstop.
        netlocs = sorted({urlsplit(url).netloc for url in seeds})
        extractor = LinkExtractor(tags=("a",), attrs=("href",), allow_domains=netlocs)
        # rel=nofollow links are left, as gossamer leaves them by default (follow_nofollow)
        self.rules = (Rule(extractor, callback="count", follow=True, process_links=_followed),)
        self.pages = 0
        self.urls: list[str] = []
        super().__init__(**kwargs)

    async def start(self) -> AsyncIterator[Request]:
        """The seeds, without ``dont_filter``: a later link to a seed is then no second fetch."""
        for url in self.start_urls:
            yield Request(url)

    def count(self, response: Response) -> list[Any]:
        """Rule callback: one more page answered 200; with text on, its item."""
        if response.status != 200:
            return []
        self.pages += 1
        self.urls.append(response.url)
        if not self.text:
            return []
        text = trafilatura.extract(response.text, url=response.url)
        return [{"url": response.url, "text": text or ""}]

    def parse_start_url(self, response: Response) -> list[Any]:
        """The seeds count too."""
        return self.count(response)


def _followed(links: list[Any]) -> list[Any]:
    """The links without rel=nofollow."""
    return [link for link in links if not link.nofollow]


def settings_for(concurrency: int, per_host: int, items: Path | None = None) -> dict[str, Any]:
    """Scrapy settings equal to gossamer's benchmark flags; ``items`` is the feed's file."""
    feeds = {str(items): {"format": "jsonlines", "encoding": "utf-8"}} if items else {}
    return {
        "FEEDS": feeds,
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": per_host,
        "DOWNLOAD_DELAY": 0,
        "DOWNLOAD_DELAY_JITTER": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "ROBOTSTXT_OBEY": True,
        "DEPTH_LIMIT": 0,
        "RETRY_TIMES": 3,
        "HTTPCACHE_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "LOG_LEVEL": "WARNING",
    }


def run(
    seeds: list[str], concurrency: int, per_host: int, items: Path | None = None
) -> dict[str, Any]:
    """Crawl and return the page count and Scrapy's stats; items go to ``items``, if given."""
    process = CrawlerProcess(settings_for(concurrency, per_host, items))
    crawler = process.create_crawler(BenchSpider)
    process.crawl(crawler, seeds=seeds, text=items is not None)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    spider = crawler.spider
    assert isinstance(spider, BenchSpider)
    return {
        "pages_200": spider.pages,
        "urls_200": spider.urls,
        "scrapy_version": scrapy.__version__,
        "stats": {k: v for k, v in stats.items() if isinstance(v, int | float | str)},
    }


def main() -> None:
    """Command line: crawl the seeds of ``--seeds-file`` and write the result JSON."""
    parser = argparse.ArgumentParser(description="Scrapy side of the gossamer crawl benchmark")
    parser.add_argument("--seeds-file", type=Path, required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--urls", type=Path, help="also write the URLs answered 200 here")
    parser.add_argument("--items", type=Path, help="extract main text, feed it to this JSONL")
    args = parser.parse_args()
    seeds = [s.strip() for s in args.seeds_file.read_text().splitlines() if s.strip()]
    result = run(seeds, args.concurrency, args.per_host, args.items)
    urls = result.pop("urls_200")
    if args.urls is not None:
        args.urls.write_text("".join(f"{url}\n" for url in urls), encoding="utf-8")
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
