"""The refused-hook log line: once a minute per kind, the ones left out counted."""

from __future__ import annotations

import logging

import pytest

from actors.hooks.refusals import EVERY_S, MAX_KINDS, RefusalLog


def test_each_kind_is_said_once_a_minute_with_the_count_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    refusals = RefusalLog(clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="actors.hooks.refusals"):
        assert refusals.refused(403, "launch_token_mismatch", "claude SessionStart for pane a")
        assert not refusals.refused(403, "launch_token_mismatch", "claude Stop for pane a")
        assert refusals.refused(400, "bad_pane_key", "codex Stop for pane b")  # another kind
        now[0] = EVERY_S - 0.1
        assert not refusals.refused(403, "launch_token_mismatch", "claude Stop for pane a")
        now[0] = EVERY_S
        assert refusals.refused(403, "launch_token_mismatch", "claude Stop for pane c")
    assert [r.getMessage() for r in caplog.records] == [
        "hook refused (403 launch_token_mismatch): claude SessionStart for pane a",
        "hook refused (400 bad_pane_key): codex Stop for pane b",
        "hook refused (403 launch_token_mismatch): claude Stop for pane c"
        " (2 more like it since the last line)",
    ]


def test_the_kinds_remembered_are_bounded() -> None:
    refusals = RefusalLog(clock=lambda: 0.0)
    for n in range(MAX_KINDS * 3):
        assert refusals.refused(400, f"reason-{n}", "x")
    assert len(refusals._kinds) == MAX_KINDS
