"""The C parts of gossamer (pyproject.toml holds the rest of the package's metadata).

Each is optional: where it cannot be built (no C compiler), gossamer runs the Python code it
speeds up, which stays the reference (``gossamer.native`` says which are in use)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gossamer.parse._linkwalk",
            ["src/gossamer/parse/_linkwalk.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        ),
        Extension(
            "gossamer.parse._formatscan",
            ["src/gossamer/parse/_formatscan.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        ),
    ]
)
