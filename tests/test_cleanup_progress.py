"""What a cleanup shows while it works: one live line on a terminal, a line per stage elsewhere,
nothing for the small cleanups after each group of a run."""

from __future__ import annotations

import io

from igestbench.run.cleanup_progress import SHOWN_FROM, CleanupLines


def stages(lines: CleanupLines, total: int) -> None:
    lines.stage("checking 12 journaled objects")
    lines.stage("surveying")
    lines.stage("deleting", total=total)
    for _ in range(10):
        lines.advance(total // 10)
    lines.finish(f"deleted {total} objects")


def test_a_line_per_stage_elsewhere_than_a_terminal() -> None:
    out = io.StringIO()
    stages(CleanupLines(stream=out, live=False, prefix="sv7 cleanup: j", always=True), 50)
    assert out.getvalue().splitlines() == [
        "sv7 cleanup: j: checking 12 journaled objects",
        "sv7 cleanup: j: surveying",
        "sv7 cleanup: j: deleting ~50 objects",
        "sv7 cleanup: j: deleted 50 objects",
    ]


def test_a_run_shows_only_the_large_cleanups_with_the_stages_that_led_there() -> None:
    out = io.StringIO()
    lines = CleanupLines(stream=out, live=False)
    stages(lines, SHOWN_FROM - 1)
    assert out.getvalue() == ""  # the cleanup after a group of workers: nothing to show
    stages(lines, SHOWN_FROM)
    shown = out.getvalue().splitlines()
    assert shown[0] == "sv7: cleanup: checking 12 journaled objects"
    assert shown[-1] == f"sv7: cleanup: deleted {SHOWN_FROM} objects" and len(shown) == 4


def test_one_live_line_on_a_terminal() -> None:
    out = io.StringIO()
    lines = CleanupLines(stream=out, live=True, always=True)
    lines.stage("deleting", total=1000)
    lines.advance(400)
    lines.finish("deleted 1000 objects")
    text = out.getvalue()
    assert "\r\x1b[2Ksv7: cleanup: deleting: 400 of ~1,000" in text
    assert text.endswith("\r\x1b[2Ksv7: cleanup: deleted 1000 objects\n")
