"""``cluster status``'s freshness line names what the job did: the revisits' figures only for a
job that revisits, the sitemaps' only for one that read any."""

from __future__ import annotations

from gossamer.cluster.freshness import JobFreshness


def test_a_job_that_only_read_sitemaps_shows_no_revisit_figures() -> None:
    shown = JobFreshness(sitemap_files=2, sitemap_entries=20, sitemap_admitted=12)
    assert shown.anything
    assert shown.line() == "  sitemaps 2 files, 20 URLs (+12)"


def test_a_revisiting_job_without_sitemaps_shows_no_sitemap_figures() -> None:
    results = {"changed": 3, "unchanged": 1, "not-modified": 2, "gone": 0}
    shown = JobFreshness(results=results, bytes_saved=900, backlog=4)
    assert shown.line() == (
        "  revisits changed 3 unchanged 1 not-modified 2 gone 0, spare 0, due 4, "
        "saved 900 bytes by 304s"
    )


def test_both_are_shown_when_the_job_did_both() -> None:
    shown = JobFreshness(spared=1, sitemap_files=1, sitemap_entries=5, sitemap_admitted=5)
    assert shown.line() == (
        "  revisits changed 0 unchanged 0 not-modified 0 gone 0, spare 1, due 0, "
        "saved 0 bytes by 304s; sitemaps 1 files, 5 URLs (+5)"
    )
