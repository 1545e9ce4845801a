"""Stop a crawl from Python, then resume it where it stopped.

    python examples/api_stop_resume.py [--seed URL] [--out DIR]

The first run stops itself after 10 records (as Ctrl-C stops ``gossamer crawl``: the URLs in
flight finish and everything is committed to ``DIR/crawl.db``). The second one is given
``resume=True`` (``gossamer crawl --resume``) and no seeds: it continues from crawl.db and
fetches no URL the first one recorded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
from demo_web import ALLOW_DOMAINS, RESOLVE, demo_web, options

from gossamer import Crawl, CrawlSettings


async def main(seed: str, out: Path) -> None:
    settings = CrawlSettings(
        seeds=[seed],
        out=out,
        resolve=RESOLVE,
        allow_domains=ALLOW_DOMAINS,
        per_host=1,
        delay=0.1,  # a slow crawl, so that it is stopped midway
        checkpoint_interval=0.1,
        quiet=True,
    )
    first = Crawl(settings)
    async with first:
        seen = 0
        async for _record in first.records():
            seen += 1
            if seen == 10:
                first.stop()  # graceful: in-flight URLs finish, the records are committed
    stopped = await first.wait()
    print(f"stopped after {stopped.pages} pages")

    again = Crawl(msgspec.structs.replace(settings, seeds=[], resume=True))
    stats = await again.run()
    print(f"resumed: {stats.pages} pages in all ({stats.pages - stopped.pages} new)")


if __name__ == "__main__":
    args = options(__doc__, "api-out/stop-resume")
    with demo_web(args.seed) as seed:
        asyncio.run(main(seed, args.out))
