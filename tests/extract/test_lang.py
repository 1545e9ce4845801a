"""Language detection: ISO 639-1 codes for texts in many scripts, ``None`` when unsure, bounded
cost, hostile text, no network; and ``extract`` preferring the markup's language."""

from __future__ import annotations

import socket
import time

import pytest

from gossamer.extract import extract, lang
from gossamer.extract.lang import (
    GLANCE_CHARS,
    MIN_LETTERS,
    PREFIX_CHARS,
    SAMPLE_CHARS,
    detect_language,
)

URL = "https://news.example/story"

TEXTS = {
    "en": "The council voted on Tuesday to extend the night bus network to the northern "
    "suburbs, after a trial in which ridership grew faster than expected.",
    "de": "Der Stadtrat hat am Dienstag beschlossen, das Nachtbusnetz auf die nördlichen "
    "Vororte auszuweiten, nachdem die Fahrgastzahlen im Versuch schneller wuchsen als erwartet.",
    "fr": "Le conseil municipal a voté mardi l'extension du réseau de bus de nuit vers la "
    "banlieue nord, après un essai où la fréquentation a augmenté plus vite que prévu.",
    "es": "El ayuntamiento votó el martes ampliar la red de autobuses nocturnos a los barrios "
    "del norte, tras una prueba en la que el número de viajeros creció más de lo previsto.",
    "ru": "Во вторник городской совет проголосовал за расширение сети ночных автобусов на "
    "северные пригороды после испытания, в ходе которого пассажиров стало больше ожидаемого.",
    "uk": "У вівторок міська рада проголосувала за розширення мережі нічних автобусів на "
    "північні передмістя після випробування, під час якого пасажирів стало більше.",
    "el": "Την Τρίτη το δημοτικό συμβούλιο ψήφισε την επέκταση του δικτύου νυχτερινών "
    "λεωφορείων στα βόρεια προάστια, μετά από μια δοκιμή με περισσότερους επιβάτες.",
    "ja": "市議会は火曜日、夜行バスの路線網を北部の郊外まで広げることを決めた。試験運行では利用者"
    "が予想を上回る速さで増えていた。",
    "zh": "市议会星期二投票决定将夜间公交网络延伸到北部郊区，此前的试运行中乘客人数增长快于预期。",
    "ko": "시의회는 화요일 심야버스 노선을 북부 교외까지 확대하기로 의결했다. "
    "시범 운행에서 승객 수가 예상보다 빠르게 늘었다.",
    "ar": "صوت مجلس المدينة يوم الثلاثاء على توسيع شبكة الحافلات الليلية لتشمل الضواحي الشمالية، "
    "بعد تجربة زاد فيها عدد الركاب أسرع من المتوقع.",
    "he": "מועצת העיר הצביעה ביום שלישי על הרחבת רשת האוטובוסים הליליים לפרברים הצפוניים, לאחר "
    "ניסוי שבו מספר הנוסעים גדל מהר מהצפוי.",
}


@pytest.mark.parametrize("code", sorted(TEXTS))
def test_detects_the_language_of_a_paragraph(code: str) -> None:
    assert detect_language(TEXTS[code]) == code


@pytest.mark.parametrize(
    "text",
    [
        "",
        "bare",
        "Home | About | Contact",
        "12345 67890 2024-05-01 10:00 +44 20 7946 0958 1234 5678",
        "https://example.com/a/b?c=d http://foo.test/ www.bar.org/index.html",
        "def f(x):\n    return x + 1\nfor i in range(10): print(f(i))",
        "😀😀😀 🎉🎉 👍 " * 20,
        "\x00" * 5000,
    ],
)
def test_unsure_is_none(text: str) -> None:
    assert detect_language(text) is None


def test_a_few_letters_are_not_enough() -> None:
    word = "Flussufer"
    assert detect_language(" ".join([word] * (MIN_LETTERS // len(word)))) is None
    assert detect_language(TEXTS["de"][: MIN_LETTERS + 40]) == "de"


def test_capitals_and_layout_do_not_matter() -> None:
    assert detect_language(TEXTS["en"].upper()) == "en"
    assert detect_language("\n\n".join(TEXTS["fr"].split(", "))) == "fr"
    assert detect_language("\t " + TEXTS["es"].replace(" ", "\r\n  ")) == "es"


def test_only_the_start_of_the_text_is_read() -> None:
    text = (TEXTS["de"] + " ") * (PREFIX_CHARS // len(TEXTS["de"]) + 1) + TEXTS["en"] * 10_000
    start = time.process_time()
    assert detect_language(text) == "de"
    assert time.process_time() - start < 0.5


def test_the_prose_is_read_past_the_headings_and_code_that_open_a_page() -> None:
    """A reference page opens with its title and signatures; its prose comes later."""
    code = "\n\n".join(
        f"os.path.join{i}(path, *paths)\n\nreturn_value_{i} = self._cache[key]"
        for i in range(PREFIX_CHARS // 40)
    )
    assert detect_language(code[:PREFIX_CHARS]) is None
    prose = "\n\n".join([TEXTS["en"], TEXTS["en"].replace("Tuesday", "Friday")] * 3)
    assert detect_language(code + "\n\n" + prose) == "en"


def test_hostile_text_never_raises() -> None:
    for text in (
        "\ud800\udfff lone surrogates " + TEXTS["en"],
        "\x00\x01\x7f\x85\ufffe\ufdd0 control characters " + TEXTS["en"],
        "\u202e\u200b" * 1000 + TEXTS["en"],
        "a" * 1_000_000,
    ):
        detect_language(text)
    assert detect_language("\ud800 " + TEXTS["en"]) == "en"


def test_cost_per_call_is_well_under_a_millisecond() -> None:
    text = " ".join(TEXTS.values())
    text = (text * (PREFIX_CHARS // len(text) + 1))[:PREFIX_CHARS]
    detect_language(text)
    calls = 300
    start = time.process_time()
    for _ in range(calls):
        detect_language(text)
    per_call = (time.process_time() - start) / calls
    assert per_call < 0.002, per_call  # 0.3 ms measured; loose for a loaded machine


def test_the_model_loads_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the language model tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    lang.load_model.cache_clear()
    try:
        assert detect_language(TEXTS["fr"]) == "fr"
    finally:
        lang.load_model.cache_clear()


def test_extract_prefers_the_markup_and_detects_when_it_is_silent_or_unusable() -> None:
    body = f"<body><article><p>{TEXTS['de']}</p></article></body></html>"
    assert extract(f"<html>{body}", URL).lang == "de"
    assert extract(f'<html lang="tlh-Latn">{body}', URL).lang == "de"
    assert extract(f'<html lang="x-klingon">{body}', URL).lang == "de"
    assert extract(f'<html lang="en">{body}', URL).lang == "en"
    meta = '<head><meta http-equiv="content-language" content="fr"></head>'
    assert extract(f"<html>{meta}{body}", URL).lang == "fr"
    assert extract("<html><body><nav><a href=/>Home</a></nav></body></html>", URL).lang is None


def _samples_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The samples the model is given from now on, recorded around its real ``predict``."""
    predict = lang._predict()
    read: list[str] = []

    def recorded(line: str, k: int, threshold: float, errors: str) -> list[tuple[float, str]]:
        read.append(line)
        return predict(line, k, threshold, errors)

    monkeypatch.setattr(lang, "_predict", lambda: recorded)
    return read


def test_a_sure_glance_at_the_prose_is_the_whole_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    prose = "\n\n".join([TEXTS["en"], TEXTS["en"].replace("Tuesday", "Friday")] * 3)
    read = _samples_read(monkeypatch)
    assert detect_language(prose) == "en"
    assert len(read) == 1
    assert len(read[0]) <= GLANCE_CHARS + 1  # with its "\n"


def test_an_unsure_glance_reads_the_whole_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """Prose that opens with a list of names leaves the glance unsure: the sample decides."""
    names = "Alice, Bob, Carol, Dave, Erin, Frank, Grace, Heidi, Ivan, Judy, Mallory, Niaj."
    prose = "\n".join([names, TEXTS["fr"], TEXTS["fr"].replace("mardi", "vendredi")] * 2)
    read = _samples_read(monkeypatch)
    assert detect_language(prose) == "fr"
    assert len(read) == 2
    assert len(read[0]) <= GLANCE_CHARS + 1 < len(read[1]) <= SAMPLE_CHARS + 1


@pytest.mark.parametrize("code", sorted(TEXTS))
def test_the_glance_answers_as_the_whole_sample_does(code: str) -> None:
    """Equivalence: whenever the glance is sure, the whole sample gives the same answer."""
    text = "\n".join([TEXTS[code]] * 8)
    prose = lang._prose(text)
    assert prose is not None and len(prose) > GLANCE_CHARS
    assert detect_language(text) == lang._detect(prose) == code
