"""What changed since a URL's last fetch (a continuous crawl, ``--recrawl``): the record's
``change``, the URL's next revisit and what an archive keeps of an unchanged page.

* A first fetch is ``new``; a 2xx page gets its row of revisit state (validators, digests, the
  first interval: :mod:`gossamer.frontier.revisits`). Other first answers are not revisited,
  but a ``304``: answered to a request that sent no validators, it says nothing of the page,
  so its record has no ``change`` and the URL gets a row with nothing captured (no validators,
  no digests), due again one ``initial`` interval later, and so on until an answer says
  something: a 2xx one is then the URL's first capture (``new``, with
  ``previous_fetched_at``), another (404, a redirect, ...) is ``new`` and not revisited.
* A revisit answered ``304`` is ``unchanged`` (``not-modified``: no body was downloaded) if it
  sent validators; a 304 to a request that sent none says nothing of the page (below). A 2xx
  one is ``unchanged`` when its payload digest is the last fetch's, or its main-text digest is
  (with text extraction on: a changed ad or timestamp is not a change), else ``changed``.
* A revisit answered 404, 410 or a redirect is ``gone`` (a tombstone): checked again at the
  same interval, and no more once it said so ``max_gone`` times; an answer back resets that.
* A revisit without an answer (timeouts, 5xx after its retries), with another status or with
  a 2xx body the connection cut short (`gossamer.outcomes.cut_short`: its partial copy, kept
  once the retries were spent) keeps its row and is due again one interval later; its record
  has no ``change``. A first fetch cut short is ``new``, its row without validators: a
  conditional revisit's 304 would stand for the partial copy, the next fetch asks for it all.

The record of an unchanged page holds what was fetched: a 2xx one, its full fields (the page
was read anyway); a 304, a short record (status 304, no body, no content fields), which the
PostgreSQL store applies as a mark on the row of the full one. In the WARC, an unchanged page
is a ``revisit`` record referring to the last full capture (``identical-payload-digest``, or
``server-not-modified`` for a 304), not a second copy of the body.
"""

from __future__ import annotations

from msgspec.structs import replace

from gossamer.digests.simhash import text_utf8
from gossamer.fetch.headers import conditional_headers
from gossamer.frontier.revisit import History, next_interval, observe
from gossamer.frontier.revisits import RevisitBook, RevisitState, content_digest
from gossamer.outcomes import Action, cut_short
from gossamer.page.state import PageState
from gossamer.sinks.base import IDENTICAL_PAYLOAD, NOT_MODIFIED, Revisit

_GONE = frozenset({404, 410})


def _whole_2xx(status: int | None, error: str | None) -> bool:
    """A 2xx answer whose copy is the page: whole, or cut by our own caps (not a partial copy
    its connection cut short, stored once the retries were spent)."""
    return status is not None and 200 <= status < 300 and not cut_short(status, error)


class Freshness:
    """Judges each answer against the URL's last one (see the module docstring)."""

    def __init__(self, revisits: RevisitBook) -> None:
        self._revisits = revisits

    def judge(self, state: PageState, action: Action) -> None:
        """Set the page's ``change`` (and ``previous_fetched_at``, and what an archive keeps
        of an unchanged page); stage the URL's new revisit row."""
        url = state.lease.url
        previous = self._revisits.state(url)
        if previous is None:
            self._first(state, action)
            return
        state.previous_fetched_at = previous.fetched_at
        if not _captured(previous):
            self._uncaptured(state, action, previous)
            return
        status = state.result.status
        if status == 304 and conditional_headers(self._revisits.validators(url)) is not None:
            self._unchanged(state, previous, previous, NOT_MODIFIED)
        elif action is Action.STORE and _whole_2xx(status, state.result.error):
            self._compared(state, previous)
        elif status in _GONE or action is Action.REDIRECT:
            self._gone(state, previous)
        else:  # no answer, or one that says nothing of the page (a partial copy, once the
            # retries were spent): try again an interval later
            now = state.result.fetched_at
            self._revisits.observed(url, replace(previous, due=now + previous.interval))

    def _first(self, state: PageState, action: Action) -> None:
        result = state.result
        if result.status == 304:
            self._again(state, None)
            return
        state.change = "new" if result.status is not None else None
        if action is not Action.STORE:
            return
        bounds = self._revisits.bounds(state.lease.url, result.content_type)
        now = result.fetched_at
        fresh = RevisitState(
            state.lease.fp,
            fetched_at=now,
            captured_at=now,
            interval=bounds.initial,
            due=now + self._revisits.wait(bounds.initial),
        )
        row = self._content(state, fresh)
        if cut_short(result.status, result.error):  # a partial copy: its validators would
            row = replace(row, etag=None, last_modified=None)  # get a 304 standing for it
        self._revisits.observed(state.lease.url, row)

    def _uncaptured(self, state: PageState, action: Action, previous: RevisitState) -> None:
        """An answer to a URL whose every answer so far was a bare 304 (nothing captured)."""
        status = state.result.status
        if action is Action.STORE or status == 304:
            self._first(state, action)
        elif status is None:  # no answer: try again, as any revisit
            self._again(state, previous)
        else:  # the first answer that says something, and not a page: not revisited
            state.change = "new"
            now = state.result.fetched_at
            self._revisits.observed(state.lease.url, replace(previous, fetched_at=now, due=None))

    def _again(self, state: PageState, previous: RevisitState | None) -> None:
        """Nothing captured yet: the URL's row says when it was asked, and that it is due
        again one ``initial`` interval later (no validators, no digests: a 304 to a request
        that sent none tells nothing of them)."""
        result = state.result
        bounds = self._revisits.bounds(state.lease.url, result.content_type)
        now = result.fetched_at
        row = previous or RevisitState(state.lease.fp, interval=bounds.initial)
        due = now + self._revisits.wait(bounds.initial)
        self._revisits.observed(state.lease.url, replace(row, fetched_at=now, due=due))

    def _content(self, state: PageState, row: RevisitState) -> RevisitState:
        """``row`` with the validators, digests, size and type of the page's answer."""
        result = state.result
        headers = result.headers
        text = (state.text.text if state.text is not None else None) or None
        return replace(
            row,
            etag=headers.get("etag", row.etag),
            last_modified=headers.get("last-modified", row.last_modified),
            payload=content_digest(result.body),
            # the text's UTF-8 the content digest made (and kept with it), not a copy again
            text=None if text is None else content_digest(text_utf8(text, "replace")),
            size=len(result.body),
            content_type=result.content_type,
        )

    def _compared(self, state: PageState, previous: RevisitState) -> None:
        fetched = self._content(state, previous)
        same_payload = fetched.payload == previous.payload
        if same_payload and previous.gone == 0:
            self._unchanged(state, previous, fetched, IDENTICAL_PAYLOAD)
        elif fetched.text is not None and fetched.text == previous.text and previous.gone == 0:
            row = replace(fetched, captured_at=state.result.fetched_at)
            self._unchanged(state, previous, row, None)
        else:
            state.change = "changed"
            self._revisits.results["changed"] += 1
            row = replace(fetched, captured_at=state.result.fetched_at, gone=0)
            self._schedule(state, previous, row, changed=True)

    def _unchanged(
        self, state: PageState, previous: RevisitState, row: RevisitState, profile: str | None
    ) -> None:
        """An unchanged page: a 304 (``NOT_MODIFIED``), the same payload
        (``IDENTICAL_PAYLOAD``) or the same main text (None: archived in full)."""
        result, revisits = state.result, self._revisits
        state.change = "unchanged"
        if profile == NOT_MODIFIED:
            revisits.results["not-modified"] += 1
            revisits.bytes_saved += row.size
            headers = result.headers
            row = replace(
                row,
                etag=headers.get("etag", row.etag),
                last_modified=headers.get("last-modified", row.last_modified),
            )
        else:
            revisits.results["unchanged"] += 1
        if profile is not None and result.exchange is not None:
            state.revisit = Revisit(
                result.url, result.fetched_at, result.exchange, profile, row.captured_at
            )
        self._schedule(state, previous, row, changed=False)

    def _schedule(
        self, state: PageState, previous: RevisitState, row: RevisitState, *, changed: bool
    ) -> None:
        """Stage ``row`` with the interval its history now calls for."""
        now = state.result.fetched_at
        history = observe(
            History(previous.checks, previous.changes, previous.observed, previous.interval),
            changed,
            now - previous.fetched_at,
        )
        bounds = self._revisits.bounds(state.lease.url, row.content_type)
        interval = next_interval(history, bounds)
        self._revisits.observed(
            state.lease.url,
            replace(
                row,
                fetched_at=now,
                interval=interval,
                due=now + self._revisits.wait(interval),
                checks=history.checks,
                changes=history.changes,
                observed=history.observed,
            ),
        )

    def _gone(self, state: PageState, previous: RevisitState) -> None:
        state.change = "gone"
        self._revisits.results["gone"] += 1
        now = state.result.fetched_at
        gone = previous.gone + 1
        due = now + previous.interval if gone < self._revisits.max_gone else None
        row = replace(previous, fetched_at=now, gone=gone, due=due)
        self._revisits.observed(state.lease.url, row)


def _captured(row: RevisitState) -> bool:
    """Whether a page was ever captured at ``row``'s URL (a row with nothing captured has
    neither digest nor capture time: see :meth:`Freshness._again`)."""
    return row.payload is not None or row.text is not None or row.captured_at > 0


__all__ = ["Freshness"]
