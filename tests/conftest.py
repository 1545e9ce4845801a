"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest
from tests.tls_certs import TlsFiles, make_tls_files


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A throwaway CA, server and client certificates (made once per session)."""
    return make_tls_files(tmp_path_factory.mktemp("tls"))
