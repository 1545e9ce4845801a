"""Run a crawl from Python and read its records as they are written.

    python examples/api_records.py [--seed URL] [--out DIR]

Without ``--seed`` it crawls the bundled test web (see ``demo_web.py``). Each record is printed the
moment the crawl has committed it to ``DIR/crawl.db`` and written it to pages.jsonl.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from demo_web import ALLOW_DOMAINS, RESOLVE, demo_web, options

from gossamer import Crawl, CrawlSettings


async def main(seed: str, out: Path) -> None:
    settings = CrawlSettings(
        seeds=[seed],
        out=out,
        max_pages=40,
        resolve=RESOLVE,
        allow_domains=ALLOW_DOMAINS,
        quiet=True,
    )
    crawl = Crawl(settings)
    async with crawl:  # starts the crawl; leaving the block waits for its end
        async for record in crawl.records():
            print(record.status, record.url, record.title or "")
    stats = await crawl.wait()
    print(f"{stats.pages} pages, {stats.errors} errors, in {stats.elapsed:.1f}s")


if __name__ == "__main__":
    args = options(__doc__, "api-out/records")
    with demo_web(args.seed) as seed:
        asyncio.run(main(seed, args.out))
