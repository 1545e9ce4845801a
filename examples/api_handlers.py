"""Page handlers by URL pattern that give items and links to follow: the Python twin of a rule
document (``examples/rules/``) and of ``--hook``.

    python examples/api_handlers.py [--seed URL] [--out DIR]

The front page's handler follows its first five links only; the article handler gives an
item per article and follows the article's links; pages no handler matches are crawled as
usual. Items land in each record's ``found``, in ``DIR/items.jsonl`` and in the store;
an exception in a handler is recorded on its page (``error``: ``handler-error: ...``) and the
crawl goes on. ``gossamer.run`` is the blocking way to run a crawl: no event loop to write.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from demo_web import ALLOW_DOMAINS, RESOLVE, demo_web, options

import gossamer
from gossamer import Handlers, Link, Page

handlers = Handlers()


@handlers.handler(r"^https?://[^/]+/$")
def front_page(page: Page) -> Iterator[Link]:
    """The front page: follow its first five links, not all of them."""
    for url in page.links[:5]:
        yield Link(url)


@handlers.handler(r"/(news|blog|docs)/[^/]+/$")
def article(page: Page) -> Iterator[dict[str, Any] | Link]:
    """An article: one item, and its links on the same host."""
    host = urlsplit(page.url).netloc
    words = len(page.content.text.split()) if page.content and page.content.text else 0
    yield {"title": page.title, "words": words, "section": urlsplit(page.url).path.split("/")[1]}
    yield from (Link(url) for url in page.links if urlsplit(url).netloc == host)


if __name__ == "__main__":
    args = options(__doc__, "api-out/handlers")
    with demo_web(args.seed) as seed:
        stats = gossamer.run(
            seed,
            out=args.out,
            max_pages=60,
            resolve=RESOLVE,
            allow_domains=ALLOW_DOMAINS,
            quiet=True,
            handlers=handlers,
        )
    print(f"{stats.pages} pages, {stats.items} items from {stats.rule_pages} pages")
    print(f"items: {args.out / 'items.jsonl'}")
