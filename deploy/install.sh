#!/bin/sh
# Install gossamer from this source tree into a fresh virtualenv:
#     deploy/install.sh VENV [EXTRAS]        e.g. deploy/install.sh /opt/gossamer render
# The image's Dockerfile runs exactly this script, and tests/deploy/test_install.py runs it into a
# temporary virtualenv and starts a worker from it, so the image installs what is tested.
# Runtime dependencies only (no dev or plot extras); pip's own options come from the
# environment (PIP_NO_CACHE_DIR, PIP_INDEX_URL, PIP_FIND_LINKS ...).
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 VENV [EXTRAS]" >&2
    exit 2
fi
venv=$1
extras=${2:-}
source_tree=$(cd "$(dirname "$0")/.." && pwd)
target=$source_tree
if [ -n "$extras" ]; then
    target="$source_tree[$extras]"
fi
python=${PYTHON:-python3}
# The virtualenv gets no pip of its own (ensurepip takes seconds, and the runtime needs none):
# this Python's pip installs into it (pip >= 22.3: --python); without one, the venv's own.
"$python" -m venv --without-pip "$venv"
if "$python" -m pip --python "$venv/bin/python" --version >/dev/null 2>&1; then
    venv_pip() { "$python" -m pip --python "$venv/bin/python" "$@"; }
else
    "$venv/bin/python" -m ensurepip --default-pip >/dev/null
    venv_pip() { "$venv/bin/python" -m pip "$@"; }
fi
venv_pip install --quiet --disable-pip-version-check "$target"
"$venv/bin/gossamer" --help >/dev/null
