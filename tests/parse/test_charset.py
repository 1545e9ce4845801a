"""Encoding detection and decoding by gossamer.parse.charset."""

from __future__ import annotations

import codecs
import random

import pytest

from gossamer.parse.charset import decode_body, detect_encoding
from gossamer.parse.links import parse_html

RUSSIAN = "Привет, мир! Это страница на русском языке, о погоде и новостях."
JAPANESE = "こんにちは世界。これは日本語のページです。天気とニュースについて。"
CHINESE = "你好，世界。这是一个中文网页，关于天气和新闻。我们今天讨论经济和文化。"
GREEK = "Γεια σου κόσμε. Αυτή είναι μια ελληνική σελίδα για τον καιρό και τα νέα."
FRENCH = "Voilà une très belle journée à Paris, où l'été est chaud et agréable."
POLISH = "Zażółć gęślą jaźń. Łódź jest piękna, a pogoda dzisiaj jest bardzo ładna."


def html(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>{text[:10]}</title></head><body><p>{text}</p></body></html>"


def test_header_charset_only() -> None:
    body = html(RUSSIAN).encode("cp1251")
    text, encoding = decode_body(body, "windows-1251", None)
    assert encoding == "cp1251"
    assert RUSSIAN in text


def test_content_type_header_only() -> None:
    body = html(JAPANESE).encode("shift_jis")
    text, encoding = decode_body(body, None, "text/html; charset=Shift_JIS")
    assert encoding == "cp932"
    assert JAPANESE in text


def test_header_wins_over_meta() -> None:
    body = html(RUSSIAN, '<meta charset="utf-8">').encode("koi8-r")
    detected = detect_encoding(body, "KOI8-R", "text/html; charset=utf-8")
    assert (detected.encoding, detected.source) == ("koi8-r", "header")
    assert RUSSIAN in decode_body(body, "KOI8-R", None)[0]


@pytest.mark.parametrize(
    "meta",
    [
        '<meta charset="windows-1251">',
        "<meta charset=windows-1251>",
        '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">',
    ],
)
def test_meta_only(meta: str) -> None:
    body = html(RUSSIAN, meta).encode("cp1251")
    detected = detect_encoding(body)
    assert (detected.encoding, detected.source) == ("cp1251", "meta")
    assert RUSSIAN in decode_body(body, None, None)[0]


def test_unknown_header_label_falls_through_to_meta() -> None:
    body = html(RUSSIAN, '<meta charset="windows-1251">').encode("cp1251")
    assert detect_encoding(body, "no-such-charset").encoding == "cp1251"


@pytest.mark.parametrize(
    ("bom", "codec"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ],
)
def test_bom_wins_over_header_and_meta(bom: bytes, codec: str) -> None:
    body = bom + html(RUSSIAN, '<meta charset="windows-1251">').encode(codec)
    detected = detect_encoding(body, "windows-1251", None)
    assert (detected.encoding, detected.source) == (codec, "bom")
    text, encoding = decode_body(body, "windows-1251", None)
    assert encoding == codec
    assert text.startswith("<html>")  # BOM stripped
    assert RUSSIAN in text


def test_meta_declaring_utf16_means_utf8() -> None:
    body = html("héllo", '<meta charset="utf-16">').encode("utf-8")
    assert detect_encoding(body).encoding == "utf-8"


def test_header_utf16_without_bom_is_little_endian() -> None:
    body = html(RUSSIAN).encode("utf-16-le")
    text, encoding = decode_body(body, "utf-16", None)
    assert encoding == "utf-16-le"
    assert RUSSIAN in text


@pytest.mark.parametrize("label", ["base64", "rot13", "undefined", "utf-7", "idna", "zlib", "hex"])
def test_non_text_or_unsafe_labels_are_ignored(label: str) -> None:
    body = html("plain ascii page").encode("ascii")
    text, encoding = decode_body(body, label, f"text/html; charset={label}")
    assert encoding == "utf-8"
    assert "plain ascii page" in text


def test_undeclared_utf8_is_sniffed() -> None:
    body = html(RUSSIAN + JAPANESE).encode("utf-8")
    detected = detect_encoding(body)
    assert (detected.encoding, detected.source) == ("utf-8", "sniffed")


def test_undeclared_utf8_cut_inside_a_character_is_still_utf8() -> None:
    body = html(RUSSIAN).encode("utf-8")
    cut = body[: body.index("мир".encode()) + 1]
    assert detect_encoding(cut).encoding == "utf-8"


def test_undeclared_ascii_is_utf8() -> None:
    assert detect_encoding(b"<p>hello</p>").encoding == "utf-8"


@pytest.mark.parametrize(
    ("text", "codec", "expected"),
    [
        (RUSSIAN, "cp1251", "cp1251"),
        (RUSSIAN, "koi8-r", "koi8-r"),
        (JAPANESE, "shift_jis", "cp932"),
        (JAPANESE, "euc-jp", "euc_jp"),
        (CHINESE, "gb18030", "gb18030"),
        (GREEK, "cp1253", "cp1253"),
        (FRENCH, "cp1252", "cp1252"),
    ],
)
def test_undeclared_legacy_encoding_is_sniffed(text: str, codec: str, expected: str) -> None:
    body = html(text * 5).encode(codec)
    detected = detect_encoding(body)
    assert (detected.encoding, detected.source) == (expected, "sniffed")
    decoded, encoding = decode_body(body, None, None)
    assert encoding == expected
    assert text in decoded


def test_undeclared_central_european_is_a_known_weak_spot() -> None:
    """charset_normalizer reads undeclared Polish windows-1250 as a Western encoding; the
    page still decodes without error, with a few letters wrong."""
    body = html(POLISH * 5).encode("cp1250")
    decoded, encoding = decode_body(body, None, None)
    assert encoding in {"cp1250", "cp1252", "iso8859-2", "iso8859-15"}
    assert "jest pi" in decoded


@pytest.mark.parametrize("seed", range(20))
def test_garbage_never_raises(seed: int) -> None:
    rng = random.Random(seed)
    body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 5000)))
    labels = [None, "utf-8", "utf-16", "shift_jis", "gb18030", "iso-2022-jp", "bogus"]
    label = rng.choice(labels)
    text, encoding = decode_body(body, label, None)
    assert isinstance(text, str)
    assert encoding
    text.encode("utf-8")  # no lone surrogates


def test_nul_bytes_are_kept() -> None:
    text, encoding = decode_body(b"<p>a\x00b</p>\x00", None, None)
    assert (text, encoding) == ("<p>a\x00b</p>\x00", "utf-8")


def test_parse_html_uses_detected_encoding() -> None:
    body = html(RUSSIAN, '<meta charset="windows-1251">').encode("cp1251")
    page = parse_html(body, "http://example.ru/")
    assert page.text_encoding == "cp1251"
    assert page.title == RUSSIAN[:10]


def test_parse_html_header_charset_and_non_ascii_links() -> None:
    body = '<a href="/ページ">x</a><title>日本</title>'.encode("shift_jis")
    page = parse_html(body, "http://example.jp/", header_charset="Shift_JIS")
    assert page.text_encoding == "cp932"
    assert page.title == "日本"
    assert page.links == ["http://example.jp/%E3%83%9A%E3%83%BC%E3%82%B8"]  # ページ
