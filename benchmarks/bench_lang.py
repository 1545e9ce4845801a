"""Language detection benchmark: right answers and CPU ms per call, gossamer's detector
(`gossamer.extract.lang`, fastText ``lid.176.ftz``) against other PyPI detectors.

Texts: 20 hand-written paragraphs (article 1 of the Universal Declaration of Human Rights and
a sentence of local news, in 20 languages), each also cut to its first sentence, and the first
`PREFIX` characters of the 28 reference texts of newspaper4k's test data (English, Arabic,
Bengali, Burmese, Chinese, Hindi, Japanese, Korean, Latvian, Nepali, Spanish, Thai; fetched
by ``bench_extract.py``'s ``fetch``), plus texts that are no language at all (digits, URLs,
navigation words, code, emoji), which a detector should not be sure of.

Time: ``time.process_time`` over repeated calls on the long texts, after one warm-up call.
Candidates in ``benchmarks/requirements-lang.txt`` are compared when installed; each raw
detector answers with its best guess and its confidence, gossamer's with a code or ``None``.

Run: ``PYTHONPATH=src python benchmarks/bench_lang.py``. Exit status 1 if gossamer's
detector misses its targets: no long text wrong (unsure, ``None``, is allowed) and under 1 ms a
call.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench_extract import NEWSPAPER_SHA256, fetch
from gossamer.extract.lang import PREFIX_CHARS, detect_language

PREFIX = PREFIX_CHARS
TARGET_MS = 1.0
Detector = Callable[[str], tuple[str | None, float]]

SAMPLES = {
    "en": "All human beings are born free and equal in dignity and rights. They are endowed "
    "with reason and conscience and should act towards one another in a spirit of brotherhood. "
    "The weather was mild on Tuesday, and the council met to discuss the new bus routes.",
    "de": "Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit "
    "Vernunft und Gewissen begabt und sollen einander im Geist der Brüderlichkeit begegnen. Am "
    "Dienstag traf sich der Stadtrat, um über die neuen Buslinien zu sprechen.",
    "fr": "Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont "
    "doués de raison et de conscience et doivent agir les uns envers les autres dans un esprit "
    "de fraternité. Mardi, le conseil municipal s'est réuni pour discuter des nouvelles lignes "
    "de bus.",
    "es": "Todos los seres humanos nacen libres e iguales en dignidad y derechos y, dotados "
    "como están de razón y conciencia, deben comportarse fraternalmente los unos con los "
    "otros. El martes el ayuntamiento se reunió para hablar de las nuevas líneas de autobús.",
    "it": "Tutti gli esseri umani nascono liberi ed eguali in dignità e diritti. Essi sono "
    "dotati di ragione e di coscienza e devono agire gli uni verso gli altri in spirito di "
    "fratellanza. Martedì il consiglio comunale si è riunito per discutere delle nuove linee "
    "di autobus.",
    "pt": "Todos os seres humanos nascem livres e iguais em dignidade e em direitos. Dotados "
    "de razão e de consciência, devem agir uns para com os outros em espírito de fraternidade. "
    "Na terça-feira a câmara municipal reuniu-se para discutir as novas linhas de autocarro.",
    "nl": "Alle mensen worden vrij en gelijk in waardigheid en rechten geboren. Zij zijn "
    "begiftigd met verstand en geweten, en behoren zich jegens elkander in een geest van "
    "broederschap te gedragen. Op dinsdag kwam de gemeenteraad bijeen om over de nieuwe "
    "buslijnen te praten.",
    "sv": "Alla människor är födda fria och lika i värde och rättigheter. De har utrustats "
    "med förnuft och samvete och bör handla gentemot varandra i en anda av broderskap. I "
    "tisdags träffades kommunfullmäktige för att diskutera de nya busslinjerna.",
    "pl": "Wszyscy ludzie rodzą się wolni i równi pod względem swej godności i swych praw. Są "
    "oni obdarzeni rozumem i sumieniem i powinni postępować wobec innych w duchu braterstwa. "
    "We wtorek rada miasta zebrała się, aby omówić nowe linie autobusowe.",
    "cs": "Všichni lidé rodí se svobodní a sobě rovní co do důstojnosti a práv. Jsou nadáni "
    "rozumem a svědomím a mají spolu jednat v duchu bratrství. V úterý se sešlo městské "
    "zastupitelstvo, aby projednalo nové autobusové linky.",
    "ru": "Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены "
    "разумом и совестью и должны поступать в отношении друг друга в духе братства. Во вторник "
    "городской совет собрался, чтобы обсудить новые автобусные маршруты.",
    "uk": "Всі люди народжуються вільними і рівними у своїй гідності та правах. Вони наділені "
    "розумом і совістю і повинні діяти у відношенні один до одного в дусі братерства. У "
    "вівторок міська рада зібралася, щоб обговорити нові автобусні маршрути.",
    "tr": "Bütün insanlar hür, haysiyet ve haklar bakımından eşit doğarlar. Akıl ve vicdana "
    "sahiptirler ve birbirlerine karşı kardeşlik zihniyeti ile hareket etmelidirler. Salı "
    "günü belediye meclisi yeni otobüs hatlarını görüşmek için toplandı.",
    "el": "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και τα "
    "δικαιώματα. Είναι προικισμένοι με λογική και συνείδηση, και οφείλουν να συμπεριφέρονται "
    "μεταξύ τους με πνεύμα αδελφοσύνης. Την Τρίτη το δημοτικό συμβούλιο συνεδρίασε για τις "
    "νέες γραμμές λεωφορείων.",
    "he": "כל בני האדם נולדו בני חורין ושווים בערכם ובזכויותיהם. כולם חוננו בתבונה ובמצפון, "
    "לפיכך חובה עליהם לנהוג איש ברעהו ברוח של אחווה. ביום שלישי התכנסה מועצת העיר כדי לדון "
    "בקווי האוטובוס החדשים.",
    "ja": "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"
    "人間は、理性と良心とを授けられており、互いに同胞の精神をもって行動しなければならない。"
    "火曜日に市議会が開かれ、新しいバス路線について話し合った。",
    "zh": "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。"
    "星期二，市议会开会讨论了新的公交线路。",
    "ko": "모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다. 인간은 천부적으로 "
    "이성과 양심을 부여받았으며 서로 형제애의 정신으로 행동하여야 한다. 화요일에 시의회는 새로운 "
    "버스 노선을 논의하기 위해 모였다.",
    "fi": "Kaikki ihmiset syntyvät vapaina ja tasavertaisina arvoltaan ja oikeuksiltaan. "
    "Heille on annettu järki ja omatunto, ja heidän on toimittava toisiaan kohtaan veljeyden "
    "hengessä. Tiistaina kaupunginvaltuusto kokoontui keskustelemaan uusista bussilinjoista.",
    "id": "Semua orang dilahirkan merdeka dan mempunyai martabat dan hak-hak yang sama. Mereka "
    "dikaruniai akal dan hati nurani dan hendaknya bergaul satu sama lain dalam semangat "
    "persaudaraan. Pada hari Selasa dewan kota bertemu untuk membahas rute bus yang baru.",
}
NO_LANGUAGE = {
    "digits": "12345 67890 2024-05-01 10:00 +44 20 7946 0958",
    "urls": "https://example.com/a/b?c=d http://foo.test/ www.bar.org",
    "navigation": "Home | About | Contact",
    "code": "def f(x):\n    return x + 1\nfor i in range(10): print(f(i))",
    "emoji": "😀😀😀 🎉🎉 👍",
}
_NEWS_LANGUAGE = {
    "arabic": "ar", "bengali": "bn", "burmese": "my", "chinese": "zh", "hindi": "hi",
    "japanese": "ja", "korean": "ko", "latvian": "lv", "nepali": "ne", "spanish": "es",
    "thai": "th",
}  # fmt: skip
_ALIASES = {"iw": "he", "zh-Hant": "zh"}


def news_texts(data: Path) -> list[tuple[str, str, str]]:
    """(name, language, text) of newspaper4k's reference texts; unnamed ones are English."""
    out = []
    for path in sorted((data / "txt").glob("*.txt")):
        lang = next((v for k, v in _NEWS_LANGUAGE.items() if path.stem.startswith(k)), "en")
        out.append((path.stem, lang, path.read_text("utf-8")[:PREFIX]))
    return out


def first_sentence(text: str) -> str:
    return text.split(". ")[0].split("。")[0]


def gossamer() -> Detector:
    return lambda text: (detect_language(text), 1.0)


def fasttext_raw() -> Detector:
    from gossamer.extract.lang import load_model

    model = load_model()

    def detect(text: str) -> tuple[str | None, float]:
        labels, scores = model.predict(" ".join(text.split()), k=1)
        return str(labels[0]).removeprefix("__label__"), float(scores[0])

    return detect


def py3langid() -> Detector:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return lambda text: identifier.classify(text)  # type: ignore[no-any-return]


def pycld2() -> Detector:
    import pycld2

    def detect(text: str) -> tuple[str | None, float]:
        # CLD2 rejects control characters as "invalid UTF-8".
        clean = "".join(c for c in text if c.isprintable() or c in "\n\t")
        reliable, _, details = pycld2.detect(clean)
        code = details[0][1]
        return (None if code == "un" else code), (details[0][2] / 100 if reliable else 0.0)

    return detect


def cld3() -> Detector:
    import gcld3

    identifier = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=1000)

    def detect(text: str) -> tuple[str | None, float]:
        result = identifier.FindLanguage(text=text)
        return result.language, result.probability

    return detect


def lingua() -> Detector:
    from lingua import LanguageDetectorBuilder

    detector = LanguageDetectorBuilder.from_all_languages().build()

    def detect(text: str) -> tuple[str | None, float]:
        found = detector.detect_language_of(text)
        if found is None:
            return None, 0.0
        confidence = detector.compute_language_confidence(text, found)
        return found.iso_code_639_1.name.lower(), confidence

    return detect


CANDIDATES: dict[str, Callable[[], Detector]] = {
    "gossamer (lid.176.ftz)": gossamer,
    "fasttext lid.176 raw": fasttext_raw,
    "pycld2": pycld2,
    "cld3-py": cld3,
    "py3langid": py3langid,
    "lingua": lingua,
}


@dataclass(frozen=True)
class Result:
    right: int
    of: int
    short_right: int
    ms: float
    load_s: float
    mb: float
    wrong: list[tuple[str, str | None, float]]
    no_language: list[tuple[str, str | None, float]]


def measure(make: Callable[[], Detector], news: list[tuple[str, str, str]]) -> Result:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    detect = make()
    detect("a warm-up call, loading whatever the detector loads")
    load = time.perf_counter() - started
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    long = [(lang, lang, text) for lang, text in SAMPLES.items()] + news
    wrong = []
    for name, lang, text in long:
        got, score = detect(text)
        if _ALIASES.get(got or "", got) != lang:
            wrong.append((name, got, score))
    short_right = sum(
        _ALIASES.get(got or "", got) == lang
        for lang, text in SAMPLES.items()
        for got, _ in [detect(first_sentence(text))]
    )
    no_language = [(name, *detect(text)) for name, text in NO_LANGUAGE.items()]
    texts = [text for _, _, text in long]
    calls = 0
    start = time.process_time()
    while time.process_time() - start < 2.0:
        for text in texts:
            detect(text)
        calls += len(texts)
    ms = (time.process_time() - start) / calls * 1000
    return Result(
        len(long) - len(wrong), len(long), short_right, ms, load, grown, wrong, no_language
    )


def _answers(answers: list[tuple[str, str | None, float]]) -> str:
    return ", ".join(f"{name} {got} ({score:.2f})" for name, got, score in answers) or "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-out/extract-eval"))
    args = parser.parse_args()
    news = news_texts(fetch(args.out, "newspaper4k", "0.9.6", NEWSPAPER_SHA256) / "tests" / "data")
    results = {}
    for name, make in CANDIDATES.items():
        try:
            results[name] = measure(make, news)
        except ImportError as error:
            print(f"{name}: not installed ({error.name})", file=sys.stderr)
    print(f"{len(SAMPLES)} paragraphs and their first sentences, {len(news)} news texts")
    print(f"{'detector':24} {'long right':>11} {'short':>6} {'ms/call':>8} {'load s':>7} {'MB':>5}")
    for name, r in results.items():
        print(
            f"{name:24} {f'{r.right}/{r.of}':>11} {r.short_right:>3}/{len(SAMPLES)} {r.ms:8.3f}"
            f" {r.load_s:7.2f} {r.mb:5.0f}"
        )
        print(f"    not right: {_answers(r.wrong)}")
        print(f"    on no language: {_answers(r.no_language)}")
    mine = results["gossamer (lid.176.ftz)"]
    wrong = [w for w in mine.wrong if w[1] is not None]  # None: unsure, allowed
    ok = not wrong and mine.ms < TARGET_MS
    print(
        f"{'PASS' if ok else 'FAIL'}: gossamer wrong on {_answers(wrong)}, {mine.ms:.3f} ms a call"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
