"""What a crawl keeps of each page: main text and metadata of HTML, plain text, PDF text, in
every embedded sink; the language from the markup or detected; every field in every record;
``--no-text``, ``--max-text-chars`` and ``--extractor``. Real server on loopback."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.content_site import PDF_TEXT, crawl

from gossamer.extract import EXTRACTORS, lang
from gossamer.settings import SettingsError
from gossamer.sinks.base import FIELD_NAMES, PageRecord

pytestmark = pytest.mark.timeout(60)

CONTENT_FIELDS = {
    "text": None,
    "lang": None,
    "description": None,
    "canonical": None,
    "published": None,
    "authors": [],
    "images": [],
    "text_chars": None,
}
"""The content fields of a record without content: null or an empty list, never missing."""


def stored(out: Path) -> dict[str, PageRecord]:
    """crawl.db's records by path."""
    with sqlite3.connect(out / "crawl.db") as conn:
        rows = conn.execute(f"SELECT {', '.join(FIELD_NAMES)} FROM pages").fetchall()
    return {"/" + r.url.split("/", 3)[3]: r for r in map(PageRecord.from_row, rows)}


async def test_each_page_keeps_its_text_and_metadata(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out")
    home = records["/"]
    assert "Rivers carry water" in home["text"] and "The Nile" in home["text"]
    assert "Copyright" not in home["text"] and "Contact" not in home["text"]
    assert home["text_chars"] == len(home["text"])
    assert home["lang"] == "en" and home["description"] == "All about rivers."
    assert home["canonical"].endswith("/rivers") and home["canonical"].startswith("http://")
    assert home["published"].startswith("2024-05-01") and home["authors"] == ["Ada Lovelace"]
    assert [i["alt"] for i in home["images"]] == ["A delta"]
    assert home["images"][0]["src"].endswith("/img/delta.jpg")
    assert records["/plain.txt"]["text"] == (
        "Первый абзац о реках\nстрока два: Волга впадает в Каспийское море\n\nВторой абзац"
    )
    assert records["/doc.pdf"]["text"] == PDF_TEXT
    bare = records["/bare"]
    assert bare["text"] == "bare" and bare["text_chars"] == 4
    assert {k: bare[k] for k in CONTENT_FIELDS if k not in ("text", "text_chars")} == {
        k: v for k, v in CONTENT_FIELDS.items() if k not in ("text", "text_chars")
    }
    db = stored(tmp_path / "out")
    assert db["/"].authors == ("Ada Lovelace",) and db["/"].text == home["text"]
    assert db["/"].images == ({"src": home["images"][0]["src"], "alt": "A delta"},)


async def test_language_from_the_markup_else_detected_from_the_text(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out")
    assert records["/"]["lang"] == "en"  # <html lang="en-GB">
    assert records["/stated"]["lang"] == "de"  # the markup wins over the English text
    assert records["/de"]["lang"] == "de"  # no markup: detected
    assert records["/klingon"]["lang"] == "fr"  # unusable markup: detected
    assert records["/plain.txt"]["lang"] == "ru"
    assert records["/doc.pdf"]["lang"] == "en"
    assert records["/bare"]["lang"] is None  # one word: unsure
    assert stored(tmp_path / "out")["/de"].lang == "de"


async def test_every_record_has_every_field(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out")
    assert records["/missing"]["status"] == 404 and records["/moved"]["status"] == 301
    for path, record in records.items():
        assert list(record) == list(FIELD_NAMES), path
    for path in ("/missing", "/moved"):
        assert {k: records[path][k] for k in CONTENT_FIELDS} == CONTENT_FIELDS, path
    db = stored(tmp_path / "out")
    assert db["/missing"].authors == () and db["/missing"].images == ()
    assert db["/missing"].text is None and db["/missing"].text_chars is None


async def test_no_text_and_a_text_limit(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "none", text=False)
    links = {"canonical"}  # a link, not content: read without text too
    for path, record in records.items():
        assert {k: record[k] for k in CONTENT_FIELDS if k not in links} == {
            k: v for k, v in CONTENT_FIELDS.items() if k not in links
        }, path
    assert records["/"]["canonical"].endswith("/rivers")
    assert records["/"]["title"] == "Rivers" and records["/"]["outlinks"] > 0
    cut = await crawl(tmp_path / "cut", max_text_chars=20)
    assert len(cut["/"]["text"]) == 20 and "text-cut" in cut["/"]["flags"]
    assert cut["/"]["text_chars"] > 20
    assert len(cut["/doc.pdf"]["text"]) == 20


@pytest.mark.parametrize("extractor", sorted(EXTRACTORS))
async def test_each_extractor_keeps_the_article(tmp_path: Path, extractor: str) -> None:
    if extractor not in ("tree", "density"):  # optional (benchmarks/requirements-extract.txt)
        pytest.importorskip(extractor)
    records = await crawl(tmp_path / "out", extractor=extractor)
    assert "Rivers carry water" in records["/"]["text"]
    assert "Copyright" not in records["/"]["text"]
    assert records["/de"]["lang"] == "de" and records["/"]["authors"] == ["Ada Lovelace"]


async def test_an_extractor_not_installed_is_a_settings_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "trafilatura", None)  # import trafilatura fails
    with pytest.raises(SettingsError, match=r"extractor.*trafilatura.*not installed"):
        await crawl(tmp_path / "out", extractor="trafilatura")
    assert not (tmp_path / "out" / "pages.jsonl").exists()


async def test_a_missing_language_model_is_a_settings_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "fasttext", None)
    lang.load_model.cache_clear()
    try:
        with pytest.raises(SettingsError, match=r"fasttext.*--no-text"):
            await crawl(tmp_path / "out")
    finally:
        lang.load_model.cache_clear()
    assert not (tmp_path / "out" / "pages.jsonl").exists()


def test_the_crawlers_start_checks_the_language_model_without_loading_it() -> None:
    # the crawler loads the model (124 M instructions) at the first text it detects the
    # language of: most pages state theirs, and the big ones are read in the parse workers
    script = (
        "import sys; from gossamer.crawl.builders import check_extraction; "
        "check_extraction('tree'); print('fasttext' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
    assert lang.model_path().is_file()
