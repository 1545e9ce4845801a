"""Hostile pages through whole crawls against a real server on loopback: a 50 MB page, markup
nested 100,000 deep, hostile PDFs, and pages in legacy encodings declared nowhere, in the
header only, in ``<meta>`` only, or in both, disagreeing. Each page ends as one record with a
bounded outcome, its text decoded right, and the crawl goes on."""

from __future__ import annotations

import functools
import time
from pathlib import Path

import pytest
from aiohttp import web
from tests.content_site import crawl
from tests.pdfs import bomb, cyclic_page_tree, encrypted, many_pages

from gossamer.crawl import stages as stages_module
from gossamer.extract.pdf import PdfPool
from gossamer.parse.charset import sniff_encoding
from gossamer.parse.guard import CUT_FORMATTING, FLATTENED
from gossamer.sinks.base import FIELD_NAMES
from gossamer.testweb import payloads

pytestmark = pytest.mark.timeout(120)

MIB = 1 << 20
AFTER = "After the hostile page, an ordinary one: the crawl goes on and keeps its text whole."


def html(body: str, head: str = "") -> str:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>"


def links(*paths: str) -> bytes:
    anchors = "".join(f'<a href="{path}">{path}</a> ' for path in (*paths, "/after"))
    return html(f"<p>{anchors}</p>").encode()


async def respond(request: web.Request, pages: dict[str, tuple[str, bytes]]) -> web.Response:
    if request.path == "/after":
        return web.Response(text=html(f"<p>{AFTER}</p>"), content_type="text/html")
    content_type, body = pages[request.path]
    return web.Response(body=body, headers={"Content-Type": content_type})


# -- size and depth ----------------------------------------------------------------------------


async def huge_page(request: web.Request) -> web.StreamResponse:
    """``/huge``: 50 MB of HTML streamed (never held whole); ``/`` links to it."""
    if request.path != "/huge":
        return await respond(request, {"/": ("text/html", links("/huge"))})
    total = 50 * MIB
    response = web.StreamResponse(headers={"Content-Type": "text/html"})
    response.content_length = total
    await response.prepare(request)
    try:
        for piece in payloads.huge_chunks(total):
            await response.write(piece)
    except (ConnectionError, RuntimeError):  # the crawler hung up at its limit
        pass
    return response


@pytest.mark.parametrize("max_body", [None, 2 * MIB])
async def test_a_50_mb_page_is_cut_at_the_body_limit_and_extracted_in_bounded_time(
    tmp_path: Path, max_body: int | None
) -> None:
    flags = {} if max_body is None else {"max_body_bytes": max_body}
    start = time.process_time()
    records = await crawl(tmp_path / "out", huge_page, **flags)
    cpu = time.process_time() - start
    limit = max_body or 10 * MIB  # --max-body-bytes, 10 MiB by default
    huge = records["/huge"]
    assert (huge["status"], huge["truncated"], huge["bytes"]) == (200, True, limit)
    assert huge["error"] is None
    assert huge["text"].startswith("huge body line of filler text")
    assert limit - 1024 < huge["text_chars"] <= limit and huge["lang"] == "en"
    if limit > 1_000_000:  # --max-text-chars
        assert len(huge["text"]) == 1_000_000 and "text-cut" in huge["flags"]
    assert records["/after"]["text"] == AFTER
    assert cpu < 20, cpu  # 10 MiB: about 0.5 s to parse and extract on the development machine


DEEP_TEXT = (
    "Deep inside a hundred thousand elements this paragraph is still the article of the "
    "page, and a reader who scrolls down finds it whole, sentence after sentence. "
) * 3
INTRO = "The page opens with an ordinary paragraph that any extractor keeps as the article."
OUTRO = "After the nesting, a last paragraph closes the article with a few more words."


def deep_page(depth: int) -> bytes:
    return html(
        f"<p>{INTRO}</p>{'<div>' * depth}<p>{DEEP_TEXT}</p>{'</div>' * depth}<p>{OUTRO}</p>",
        "<title>Deep</title>",
    ).encode()


async def deep(request: web.Request) -> web.Response:
    pages = {"/": ("text/html", links("/deep")), "/deep": ("text/html", deep_page(100_000))}
    return await respond(request, pages)


async def test_100_000_nested_divs_are_flattened_and_their_page_extracted(tmp_path: Path) -> None:
    start = time.process_time()
    records = await crawl(tmp_path / "out", deep)
    assert time.process_time() - start < 20
    page = records["/deep"]
    assert (page["status"], page["error"], page["title"]) == (200, None, "Deep")
    assert FLATTENED in page["flags"]
    assert INTRO in page["text"] and OUTRO in page["text"]
    assert page["lang"] == "en" and page["text_chars"] == len(page["text"])
    assert records["/after"]["text"] == AFTER


async def test_text_nested_100_000_deep_is_kept(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", deep)
    assert " ".join(DEEP_TEXT.split()) in records["/deep"]["text"]


BOLD = "Bold words."


def formatting_page(size: int) -> tuple[bytes, int]:
    """About ``size`` bytes of ``<p><b c=N>`` closed by ``</p>`` alone, and how many
    paragraphs: lexbor rebuilds every ``<b>`` so far at each paragraph (quadratic: this page
    cost 7 s of CPU before the guard capped them)."""
    paragraphs = [f"<p><b c={n}>{BOLD}</p>" for n in range(size // 28)]
    return html("".join(paragraphs), "<title>Bold</title>").encode(), len(paragraphs)


async def test_formatting_elements_reopened_at_every_paragraph_are_capped(tmp_path: Path) -> None:
    body, paragraphs = formatting_page(150_000)
    pages = {"/": ("text/html", links("/bold")), "/bold": ("text/html", body)}

    async def handle(request: web.Request) -> web.Response:
        return await respond(request, pages)

    start = time.process_time()
    records = await crawl(tmp_path / "out", handle)
    assert time.process_time() - start < 5
    page = records["/bold"]
    assert (page["status"], page["error"], page["title"]) == (200, None, "Bold")
    assert CUT_FORMATTING in page["flags"]
    assert page["text"] == "\n\n".join([BOLD] * paragraphs)
    assert records["/after"]["text"] == AFTER


# -- PDF -----------------------------------------------------------------------------------------

PDF_TEXT = "A harmless document read after the hostile ones, its text kept whole"


def _pdfs() -> dict[str, bytes]:
    ok = payloads.pdf(PDF_TEXT)
    return {
        "/bomb.pdf": bomb(),  # 1 MB inflating to 1 GiB
        "/encrypted.pdf": encrypted(),
        "/cycle.pdf": cyclic_page_tree(),
        "/slow.pdf": many_pages(11_000),  # 4 s of pypdf's time on a quick core: twice the limit
        "/broken.pdf": b"%PDF-1.7\n" + bytes(range(256)) * 100,
        "/cut.pdf": ok + b"%" + b"x" * (3 * MIB),  # past --max-body-bytes
        "/ok.pdf": ok,
    }


async def test_hostile_pdfs_end_as_records_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stages_module, "pdf_pool", functools.partial(PdfPool, 2, timeout=2.0))
    documents = _pdfs()
    pages = {path: ("application/pdf", body) for path, body in documents.items()}
    pages["/"] = ("text/html", links(*documents))

    async def handle(request: web.Request) -> web.Response:
        return await respond(request, pages)

    records = await crawl(tmp_path / "out", handle, max_body_bytes=2 * MIB, limit=60)
    outcome = {path: (r["status"], r["error"]) for path, r in records.items()}
    assert outcome["/encrypted.pdf"] == (200, "pdf-encrypted")
    assert outcome["/cycle.pdf"] == (200, "pdf-invalid")
    assert outcome["/slow.pdf"] == (200, "pdf-timeout")
    assert outcome["/broken.pdf"] == (200, "pdf-invalid")
    assert outcome["/cut.pdf"] == (200, "pdf-truncated")
    bomb_record = records["/bomb.pdf"]
    assert bomb_record["error"] in (None, "pdf-memory", "pdf-invalid")  # pypdf caps inflation
    assert len(bomb_record["text"] or "") < MIB
    for path in ("/encrypted.pdf", "/cycle.pdf", "/slow.pdf", "/broken.pdf", "/cut.pdf"):
        record = records[path]
        assert list(record) == list(FIELD_NAMES)
        assert (record["text"], record["text_chars"], record["lang"]) == (None, None, None), path
    assert records["/ok.pdf"]["text"] == PDF_TEXT and records["/ok.pdf"]["error"] is None
    assert records["/after"]["text"] == AFTER


# -- encodings -----------------------------------------------------------------------------------

RUSSIAN_TITLE = "Волга — главная река России"
RUSSIAN_DESCRIPTION = "Всё о Волге: истоки, города и судоходство."
RUSSIAN = [
    "Волга берёт начало на Валдайской возвышенности и впадает в Каспийское море. Это самая "
    "длинная река Европы: её длина составляет три с половиной тысячи километров.",
    "На берегах Волги стоят Тверь, Ярославль, Нижний Новгород, Казань, Самара и Волгоград. "
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
]
JAPANESE_TITLE = "吾輩は猫である"
JAPANESE_DESCRIPTION = "夏目漱石の小説の書き出し。"
JAPANESE = [
    "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした"
    "所でニャーニャー泣いていた事だけは記憶している。",
    "吾輩はここで始めて人間というものを見た。しかもあとで聞くとそれは書生という人間中で一番獰悪"
    "な種族であったそうだ。",
]
SHORT = "Привет, мир!"
"""Too short to be sniffed right: in windows-1251 it reads as windows-1250, in KOI8-R as
windows-1251, unless declared."""


def legacy_page(title: str, description: str, paragraphs: list[str], head: str = "") -> str:
    meta = f'{head}<title>{title}</title><meta name="description" content="{description}">'
    return html("<article>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</article>", meta)


def short_page(head: str = "") -> str:
    return html(f"<p>{SHORT}</p>", f"{head}<title>Привет</title>")


def encoded_pages() -> dict[str, tuple[str, bytes]]:
    meta = short_page('<meta charset="windows-1251">')
    equiv = short_page('<meta http-equiv="Content-Type" content="text/html; charset=cp1251">')
    russian = legacy_page(RUSSIAN_TITLE, RUSSIAN_DESCRIPTION, RUSSIAN)
    japanese = legacy_page(JAPANESE_TITLE, JAPANESE_DESCRIPTION, JAPANESE)
    pages = {
        "/cp1251": ("text/html", russian, "cp1251"),
        "/sjis": ("text/html", japanese, "cp932"),
        "/header": ("text/html; charset=koi8-r", short_page(), "koi8-r"),
        "/meta": ("text/html", meta, "cp1251"),
        "/http-equiv": ("text/html", equiv, "cp1251"),
        "/header-over-meta": ("text/html; charset=KOI8-R", meta, "koi8-r"),
    }  # fmt: skip
    return {path: (ctype, page.encode(codec)) for path, (ctype, page, codec) in pages.items()}


async def test_undeclared_legacy_encodings_are_sniffed_into_valid_utf8(tmp_path: Path) -> None:
    pages = encoded_pages()
    pages["/"] = ("text/html", links(*pages))
    for path in ("/cp1251", "/sjis"):  # declared nowhere
        assert b"charset" not in pages[path][1] and "charset" not in pages[path][0]

    async def handle(request: web.Request) -> web.Response:
        return await respond(request, pages)

    records = await crawl(tmp_path / "out", handle)  # pages.jsonl read as strict UTF-8
    for path, title, description, paragraphs, lang in (
        ("/cp1251", RUSSIAN_TITLE, RUSSIAN_DESCRIPTION, RUSSIAN, "ru"),
        ("/sjis", JAPANESE_TITLE, JAPANESE_DESCRIPTION, JAPANESE, "ja"),
    ):
        record = records[path]
        assert (record["title"], record["description"], record["lang"]) == (
            title,
            description,
            lang,
        )
        assert record["text"] == "\n\n".join(paragraphs)
        assert "\ufffd" not in record["text"]
    assert records["/after"]["text"] == AFTER


async def test_a_declared_charset_wins_over_sniffing_and_the_header_over_meta(
    tmp_path: Path,
) -> None:
    for codec in ("koi8-r", "cp1251"):  # undeclared, these pages would be read wrong
        assert sniff_encoding(short_page().encode(codec))[0] != codec
    pages = encoded_pages()
    pages["/"] = ("text/html", links(*pages))

    async def handle(request: web.Request) -> web.Response:
        return await respond(request, pages)

    records = await crawl(tmp_path / "out", handle)
    for path in ("/header", "/meta", "/http-equiv", "/header-over-meta"):
        assert (records[path]["title"], records[path]["text"]) == ("Привет", SHORT), path
