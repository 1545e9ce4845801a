"""The dashboard application: the page, its files and its JSON API.

Routes (every one behind :mod:`gossamer.ui.security`)::

    GET  /                                   the page (static/index.html)
    GET  /healthz                            200 ok while the server serves (its probes'; the
                                             one path `gossamer ui` serves without the token)
    GET  /static/...                         its script modules and style sheet
    GET  /api/session                        the CSRF token the page sends with a POST
    POST /api/logout                         end the session (its cookie is cleared)
    GET  /api/overview                       every crawl and job, one line each
    GET  /api/crawls/{id}                    one crawl's figures
    GET  /api/crawls/{id}/pages/{page}       one page record
    GET  /api/crawls/{id}/log?level=info     the tail of its crawl.log
    GET  /api/jobs/{job}                     one cluster job's figures and live workers
    POST /api/jobs/{job}/state               {"state": "paused" | "running" | "stopped"}

The page polls the API every second; nothing reloads. More applications (the rule editor
under ``/editor``) are mounted with :func:`mount`, behind the same middlewares.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from redis.exceptions import RedisClusterException, RedisError

from gossamer import __version__
from gossamer.cluster.control import JOB_STATES
from gossamer.errors import CommandError
from gossamer.redact import redact_text
from gossamer.settings import SettingsError
from gossamer.ui.bodies import read_json
from gossamer.ui.crawls import LEVELS, Crawls
from gossamer.ui.jobs import Jobs
from gossamer.ui.security import GUARD, Guard, end_session, secure_app

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
_ID = re.compile(r"[0-9a-f]{12}")
_JOB = re.compile(r"[^{}\x00-\x1f]{1,200}")


@dataclass(slots=True)
class Sources:
    """What the dashboard shows: the crawls of these folders, the jobs of this Redis."""

    outs: list[Path] = field(default_factory=list)
    redis: str | None = None


CRAWLS = web.AppKey("crawls", Crawls)
JOBS = web.AppKey("jobs", Jobs)
HAS_JOBS = web.AppKey("has_jobs", bool)


def build_app(guard: Guard, sources: Sources) -> web.Application:
    """The dashboard behind ``guard``'s token, CSRF and header checks."""
    app = secure_app(guard)
    app[CRAWLS] = Crawls(sources.outs)
    app[HAS_JOBS] = sources.redis is not None
    app[JOBS] = Jobs(sources.redis or "redis://127.0.0.1:6379/0")
    app.router.add_get("/", index)
    app.router.add_get("/healthz", healthz)
    app.router.add_static("/static/", STATIC, follow_symlinks=False, append_version=False)
    app.router.add_get("/api/session", session)
    app.router.add_post("/api/logout", logout)
    app.router.add_get("/api/overview", overview)
    app.router.add_get("/api/crawls/{id}", crawl_detail)
    app.router.add_get("/api/crawls/{id}/pages/{page}", crawl_page)
    app.router.add_get("/api/crawls/{id}/log", crawl_log)
    app.router.add_get("/api/jobs/{job}", job_detail)
    app.router.add_post("/api/jobs/{job}/state", job_state)
    app.on_cleanup.append(_close)
    return app


def mount(app: web.Application, prefix: str, sub: web.Application) -> None:
    """Serve ``sub`` under ``prefix`` (e.g. ``/editor``) behind the dashboard's middlewares;
    it reads the CSRF token and the rest of the guard as ``request.config_dict[GUARD]``."""
    app.add_subapp(prefix, sub)


async def _close(app: web.Application) -> None:
    app[CRAWLS].close()
    await app[JOBS].close()


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, default=str))


async def index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "index.html")


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")


async def session(request: web.Request) -> web.Response:
    return _json({"csrf": request.config_dict[GUARD].csrf, "version": __version__})


async def logout(request: web.Request) -> web.Response:
    response = _json({"logged_out": True})
    if end_session(request, response):
        log.info("logged out from %s", request.remote, extra={"event": "ui-logout"})
    return response


async def overview(request: web.Request) -> web.Response:
    crawls = await asyncio.to_thread(_summaries, request.app[CRAWLS])
    jobs: list[dict[str, Any]] = []
    redis_error = None
    if request.app[HAS_JOBS]:
        try:
            names = await request.app[JOBS].names()
            jobs = [await request.app[JOBS].summary(name) for name in names]
        except (RedisError, RedisClusterException, OSError, CommandError, SettingsError) as exc:
            redis_error = redact_text(str(exc))[:300]
    return _json(
        {"crawls": crawls, "jobs": jobs, "redis": request.app[HAS_JOBS], "redis_error": redis_error}
    )


def _summaries(crawls: Crawls) -> list[dict[str, Any]]:
    return [view.summary() for view in crawls.refresh_list()]


def _crawl(request: web.Request) -> Any:
    ident = request.match_info["id"]
    if not _ID.fullmatch(ident):
        raise web.HTTPNotFound(text="no such crawl\n")
    return ident


async def crawl_detail(request: web.Request) -> web.Response:
    crawls = request.app[CRAWLS]
    view = await asyncio.to_thread(crawls.get, _crawl(request))
    if view is None:
        raise web.HTTPNotFound(text="no such crawl\n")
    await asyncio.to_thread(view.refresh)
    return _json(await asyncio.to_thread(view.detail))


async def crawl_page(request: web.Request) -> web.Response:
    view = await asyncio.to_thread(request.app[CRAWLS].get, _crawl(request))
    page = request.match_info["page"]
    if view is None or not page.isdigit() or len(page) > 18:
        raise web.HTTPNotFound(text="no such page\n")
    record = await asyncio.to_thread(view.record, int(page))
    if record is None:
        raise web.HTTPNotFound(text="no such page\n")
    return _json(record)


async def crawl_log(request: web.Request) -> web.Response:
    view = await asyncio.to_thread(request.app[CRAWLS].get, _crawl(request))
    level = request.query.get("level", "info")
    if view is None:
        raise web.HTTPNotFound(text="no such crawl\n")
    if level not in LEVELS:
        raise web.HTTPBadRequest(text=f"level is one of {', '.join(LEVELS)}\n")
    return _json({"lines": await asyncio.to_thread(view.log_tail, level)})


def _job(request: web.Request) -> str:
    job = request.match_info["job"]
    if not request.app[HAS_JOBS] or not _JOB.fullmatch(job):
        raise web.HTTPNotFound(text="no such job\n")
    return job


async def job_detail(request: web.Request) -> web.Response:
    job = _job(request)
    try:
        state = await request.app[JOBS].detail(job)
    except (RedisError, RedisClusterException, OSError, CommandError, SettingsError) as exc:
        return _json({"error": redact_text(str(exc))[:300]}, status=503)
    if not state["submitted"]:
        raise web.HTTPNotFound(text="no such job\n")
    return _json(state)


async def job_state(request: web.Request) -> web.Response:
    job = _job(request)
    body = await read_json(request)
    state = body.get("state") if isinstance(body, dict) else None
    if state not in JOB_STATES:
        raise web.HTTPBadRequest(text=f"state is one of {', '.join(JOB_STATES)}\n")
    try:
        await request.app[JOBS].set_state(job, state)
    except LookupError:
        raise web.HTTPNotFound(text="no such job\n") from None
    except (RedisError, RedisClusterException, OSError, CommandError) as exc:
        return _json({"error": redact_text(str(exc))[:300]}, status=503)
    log.info("job %s: %s from the dashboard", job, state, extra={"event": "job-state"})
    return _json({"job": job, "state": state})
