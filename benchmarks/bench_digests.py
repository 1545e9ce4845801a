"""Content digests: precision and recall of duplicate detection per Hamming threshold, and the
CPU cost per page (``gossamer.digests``).

A generated news site: ``--articles`` articles (120 to 900 words; a fifth of them 40 to 80
word briefs) on one template (navigation, sidebar of teasers, footer). Each page goes through
what a crawl does with it (lexbor parse, the default ``tree`` extractor, then the digest of
the main text), in a shuffled order, into one index per threshold. Besides the originals:

- copies that must be found (each of an article drawn at random): the same page behind
  another URL, the page with a session id printed in its template, a print version (another
  template: no navigation, a "printed from" line), small edits (a word changed, a sentence
  added, a correction note, the byline's date changed);
- pages that must not be: further articles of the same series (same template, the same
  opening and closing paragraphs as the article they follow, a different body), siblings
  (the first half of an article's paragraphs, then a text of their own) and briefs.

A flagged page is right when the first URL it names holds the same article. Precision: right
flags / flags; recall: right flags / pages that are copies of an article seen earlier.

The first row, ``exact``, is ``--digests exact`` (the default: no SimHash); the others are
``--digests near`` with each ``--digest-threshold``.

Run: ``PYTHONPATH=src python benchmarks/bench_digests.py``.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass

from gossamer.digests.base import MAX_THRESHOLD, Digest, digest
from gossamer.digests.local import NearIndex
from gossamer.extract import extract
from gossamer.parse.links import parse_html

_COMMON_WORDS = (
    "the of and to in is was for on that with as by at from his her an which were are this be "
    "or have had not but one all their there been has when who will more no if out so said "
    "what up its about into than them can only other new some could time these two may then"
)
_COMMON = _COMMON_WORDS.split()


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    article: int
    """The article the page holds (copies share their original's)."""
    html: str


class Writer:
    """Articles of English-looking prose: common words and a Zipf-drawn vocabulary."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        letters = "etaoinshrdlcumwfgypbvk"
        self.vocab = [
            "".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(4000)
        ]
        self.weights = [1 / (i + 1) for i in range(len(self.vocab))]

    def sentence(self) -> str:
        rng = self.rng
        words = [
            rng.choice(_COMMON) if rng.random() < 0.45 else self._word()
            for _ in range(rng.randint(8, 22))
        ]
        return " ".join(words).capitalize() + "."

    def _word(self) -> str:
        return self.rng.choices(self.vocab, self.weights)[0]

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 5)))

    def article(self, words: int) -> list[str]:
        out: list[str] = []
        while sum(len(p.split()) for p in out) < words:
            out.append(self.paragraph())
        return out


def render(title: str, paragraphs: list[str], extra: str = "", printed: bool = False) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    article = f"<article><h1>{title}</h1><p class=byline>By Ann Lee, 3 May</p>{body}</article>"
    if printed:
        return f"<html><body><p>Printed from news.test</p>{article}</body></html>"
    nav = "".join(f'<li><a href="/s{i}">Section {i}</a></li>' for i in range(8))
    side = "".join(
        f'<li><a href="/a{i}">Teaser {i}</a> <p>A short snippet of story {i}.</p></li>'
        for i in range(6)
    )
    return (
        f"<html><head><title>{title}</title></head><body><header><nav><ul>{nav}</ul></nav>"
        f"{extra}</header><main>{article}</main><aside><ul>{side}</ul></aside>"
        "<footer><p>About us. Contact. Privacy. Terms of use. All rights reserved.</p>"
        "</footer></body></html>"
    )


def original(article: int, paragraphs: list[str]) -> Page:
    return Page(f"http://news.test/a/{article}", article, render(f"Story {article}", paragraphs))


def site(seed: int, articles: int) -> list[Page]:
    """The originals, their copies and the similar-but-distinct pages, shuffled."""
    rng = random.Random(seed)
    writer = Writer(rng)
    texts: list[list[str]] = []
    for _ in range(articles):
        size = rng.randint(40, 80) if rng.random() < 0.2 else rng.randint(120, 900)
        texts.append(writer.article(size))
    pages = [original(i, t) for i, t in enumerate(texts)]
    series = len(texts)
    for i in rng.sample(range(articles), articles // 4):  # same series: shared intro and outro
        body = writer.article(rng.randint(150, 600))
        shared = [texts[i][0], *body, texts[i][-1]]
        texts.append(shared)
        pages.append(original(series, shared))
        series += 1
    for i in rng.sample(range(articles), articles // 4):  # a sibling: half the text shared
        half = max(len(texts[i]) // 2, 1)
        rest = max(sum(len(p.split()) for p in texts[i][half:]), 40)
        sibling = [*texts[i][:half], *writer.article(rest)]
        texts.append(sibling)
        pages.append(original(series, sibling))
        series += 1
    for n, i in enumerate(rng.choices(range(articles), k=articles)):
        paras = list(texts[i])
        kind = n % 7
        url = f"http://news.test/copy/{n}"
        if kind == 0:
            html = render(f"Story {i}", paras)
        elif kind == 1:
            html = render(f"Story {i}", paras, extra=f"<p>Session {rng.getrandbits(64):x}</p>")
        elif kind == 2:
            html = render(f"Story {i}", paras, printed=True)
        elif kind == 3:
            words = paras[0].split()
            words[rng.randrange(len(words))] = "changed"
            html = render(f"Story {i}", [" ".join(words), *paras[1:]])
        elif kind == 4:
            html = render(f"Story {i}", [*paras, writer.sentence()])
        elif kind == 5:
            html = render(f"Story {i}", [*paras, "Correction: an earlier version misspelt a name."])
        else:
            html = render(f"Story {i}", paras).replace("3 May", "4 May, updated")
        pages.append(Page(url, i, html))
    rng.shuffle(pages)
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    pages = site(args.seed, args.articles)
    digests: list[Digest | None] = []
    exacts: list[Digest | None] = []
    extract_s = digest_s = exact_s = 0.0
    words = 0
    for page in pages:
        started = time.process_time()
        parsed = parse_html(page.html.encode(), page.url)
        assert parsed.tree is not None
        text = extract(parsed.tree, page.url).text
        middle = time.process_time()
        digests.append(digest(text))
        late = time.process_time()
        exacts.append(digest(text, near=False))
        exact_s += time.process_time() - late
        digest_s += late - middle
        extract_s += middle - started
        words += len(text.split())
    print(
        f"{len(pages)} pages ({words / len(pages):.0f} words of main text on average), CPU "
        f"per page: parse + extract {1000 * extract_s / len(pages):.3f} ms, digest "
        f"{1000 * digest_s / len(pages):.3f} ms (exact only {1000 * exact_s / len(pages):.3f})"
    )
    print("threshold  flagged  exact  near  precision  recall")
    score(pages, exacts, 0, "exact")
    for threshold in range(MAX_THRESHOLD + 1):
        score(pages, digests, threshold, str(threshold))


def score(pages: list[Page], digests: list[Digest | None], threshold: int, label: str) -> None:
    """Check-and-insert every page in order; print the flags, precision and recall."""
    article_of = {page.url: page.article for page in pages}
    index = NearIndex(threshold)
    seen: set[int] = set()
    copies = right = flagged = exact = 0
    for page, dig in zip(pages, digests, strict=True):
        copies += page.article in seen
        seen.add(page.article)
        if dig is None:
            continue
        match = index.find(dig)
        if match is None:
            index.insert(page.url, dig)
            continue
        flagged += 1
        exact += match.kind == "exact"
        right += article_of[match.first] == page.article
    precision = right / flagged if flagged else 1.0
    print(
        f"{label:>9}  {flagged:7}  {exact:5}  {flagged - exact:4}  "
        f"{precision:9.3f}  {right / copies:6.3f}"
    )


if __name__ == "__main__":
    main()
