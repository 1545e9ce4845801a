"""``python -m gossamer ...``: the ``gossamer`` command, for an environment without its script
on PATH."""

import sys

from gossamer.cli import main

if __name__ == "__main__":
    sys.exit(main())
