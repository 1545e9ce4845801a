"""The C parts of gossamer (pyproject.toml holds the rest of the package's metadata).

Each is optional: where it cannot be built (no C compiler), gossamer runs the Python code it
speeds up, which stays the reference (``gossamer.native`` says which are in use)."""

from setuptools import Extension, setup

_FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"]
_HEADERS = ["src/gossamer/_lexbor.h", "src/gossamer/parse/_rel.h"]  # lexbor via selectolax; rels

setup(
    ext_modules=[
        Extension(name, [source], optional=True, extra_compile_args=_FLAGS, depends=_HEADERS)
        for name, source in (
            ("gossamer.parse._linkwalk", "src/gossamer/parse/_linkwalk.c"),
            ("gossamer.parse._formatscan", "src/gossamer/parse/_formatscan.c"),
            ("gossamer.parse._resolve", "src/gossamer/parse/_resolve.c"),
            ("gossamer.parse._tokens", "src/gossamer/parse/_tokens.c"),
            ("gossamer.extract._squash", "src/gossamer/extract/_squash.c"),
            ("gossamer.extract._marks", "src/gossamer/extract/_marks.c"),
            ("gossamer.digests._simhash", "src/gossamer/digests/_simhash.c"),
            ("gossamer.extract._whole", "src/gossamer/extract/_whole.c"),
            ("gossamer.extract._walk", "src/gossamer/extract/_walk.c"),
        )
    ]
)
