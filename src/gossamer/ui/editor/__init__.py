"""The visual rule editor, served by ``gossamer ui`` under ``/editor``: fetch a sample
page, pick fields by clicking in it, preview the rule on the site with the crawl's own
evaluation, save a rule document with its samples into ``--rules-dir``.

``editor`` holds the routes, ``fetching`` the guarded fetcher of sample pages, ``sanitize``
the allow-list that makes a page inert before it is shown, ``documents`` the rule documents
on disk. The browser side is ``ui/static/editor/`` (plain ES modules).

This package may import any gossamer module (it fetches as ``gossamer rules try`` does and
evaluates with ``gossamer.extract.rules``), and aiohttp.
"""

from gossamer.ui.editor.editor import EditorConfig, build_editor
from gossamer.ui.editor.fetching import EditorGuard, PageFetcher

__all__ = ["EditorConfig", "EditorGuard", "PageFetcher", "build_editor"]
