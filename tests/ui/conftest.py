"""Fixtures of the metrics tests: those of the cluster tests (a private redis-server, no
worker outliving its test)."""

from tests.cluster.conftest import no_process_outlives_its_test, redis_server  # noqa: F401
