"""Content extraction from parsed HTML pages: the main text and the page's metadata.

`extract` takes a page already parsed by lexbor (or its markup) and returns a frozen `Content`:
the main text chosen by an extractor (``tree``, gossamer's own model of prose in the page's
boxes, by default: `walk` records the boxes, `tree` scores them; ``density``, the text-density
model; ``trafilatura``, ``readability`` and ``resiliparse`` when those libraries are installed)
plus language, description, canonical URL, publication date, authors and the images of the main
content. `pdf.PdfPool` extracts the text of PDF documents in worker processes with a time and a
memory limit (``pypdf`` is imported in the workers only).

`rules` holds the rule parser: rule documents (CSS, XPath, regex, JSON-LD and meta fields,
record containers, link rules) checked once and evaluated on the parsed page.

This package may import the standard library, selectolax, w3lib, pydantic, `gossamer.parse`,
`gossamer.urls`, `gossamer.safe`, `gossamer.usercode` (how rule documents' registered
functions are imported) and `gossamer.eventloop` (a write to a worker's pipe that fails alike
on either loop); the third-party extractors are imported lazily, only when chosen, and
so are lxml (for rules with XPath) and fastText, whose model (`lang`) detects the language of a
text whose markup does not state it. Nothing here does I/O but the PDF pool's pipes to its
workers, the model's one read and the reading of rule documents.
"""

from gossamer.extract.text import DEFAULT_EXTRACTOR, EXTRACTORS, Content, extract

__all__ = ["DEFAULT_EXTRACTOR", "EXTRACTORS", "Content", "extract"]
