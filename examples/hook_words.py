"""A gossamer hook: adds each page's headings and word count, and follows same-host links only.

Run it on the bundled demo web (``make demo`` prints the port; or start one yourself):

    .venv/bin/python -m gossamer.testweb --port 8080 --hosts 3 --specials none &
    .venv/bin/gossamer crawl http://site0.test:8080/ --allow-domain test \\
        --resolve '*.test=127.0.0.1' --hook examples/hook_words.py:words --out hook-out
    head -n 2 hook-out/pages.jsonl      # each record has "extra": {"words": ..., "headings": [...]}

The function receives a read-only ``gossamer.hooks.Page``; whatever it raises is recorded on
that page's record (``error``: ``hook-error: ...``) and the crawl goes on.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from gossamer.hooks import HookResult, Page


def words(page: Page) -> HookResult | None:
    """Headings and word count of an HTML page; links kept only on the page's own host."""
    if page.tree is None:  # not HTML (a PDF, an image...): nothing to add
        return None
    body = page.tree.body
    text = body.text(separator=" ") if body is not None else ""
    headings = [node.text(strip=True) for node in page.tree.css("h1, h2")][:10]
    host = urlsplit(page.url).netloc
    same_host = [link for link in page.links if urlsplit(link).netloc == host]
    return HookResult(fields={"words": len(text.split()), "headings": headings}, links=same_host)
