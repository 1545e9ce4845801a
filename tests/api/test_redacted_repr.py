"""``repr``, ``str`` and rich's pretty form of the settings and worker options show no
credential: every secret-bearing field holds one here, and none may come out."""

from __future__ import annotations

from pathlib import Path

import pytest
import rich.pretty

from gossamer import CrawlSettings, JobSettings, WorkerOptions
from gossamer.settings.auth import AuthSettings

SECRET = "S3CRETPW"


def _settings(model: type[CrawlSettings]) -> CrawlSettings:
    login = AuthSettings(
        domain="site0.test",
        type="form",
        login_url=f"http://u:{SECRET}@site0.test/login",
        username_env="USER_VAR",
        password_env="PASSWORD_VAR",
        fields={"api_key": SECRET},
    )
    return model(
        seeds=[f"http://u:{SECRET}@site0.test/"],
        sitemap=[f"http://u:{SECRET}@site0.test/sitemap.xml"],
        proxies=[f"http://u:{SECRET}@127.0.0.1:3128"],
        proxy_check_url=f"http://u:{SECRET}@127.0.0.1:9/check",
        store=f"postgresql://crawler:{SECRET}@127.0.0.1/pages?sslpassword={SECRET}",
        render_url=f"ws://u:{SECRET}@127.0.0.1:9222/",
        auth=[login],
        out=Path("crawl-out"),
    )


@pytest.mark.parametrize("model", [CrawlSettings, JobSettings])
def test_settings_show_no_secret(model: type[CrawlSettings]) -> None:
    settings = _settings(model)
    for shown in (repr(settings), str(settings), rich.pretty.pretty_repr(settings)):
        assert SECRET not in shown
        assert "http://u:***@127.0.0.1:3128" in shown
        assert "'api_key': '***'" in shown
    assert settings.proxies == [f"http://u:{SECRET}@127.0.0.1:3128"]  # the values unchanged


def test_worker_options_show_no_secret() -> None:
    options = WorkerOptions(
        f"redis://:{SECRET}@127.0.0.1:6379/0",
        store=f"host=127.0.0.1 user=crawler password={SECRET}",
        proxies=(f"http://u:{SECRET}@127.0.0.1:3128",),
    )
    for shown in (repr(options), str(options)):
        assert SECRET not in shown
        assert "redis_url='redis://:***@127.0.0.1:6379/0'" in shown
        assert "store='host=127.0.0.1 user=crawler password=***'" in shown
        assert "proxies=('http://u:***@127.0.0.1:3128',)" in shown
