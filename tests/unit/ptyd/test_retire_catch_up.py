"""Which adopted sessions a replayed retirement log ends (ARCHITECTURE §3.2)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.ptyd.info import SessionInfo
from actors.ptyd.retire import (
    LoggedRetirement,
    MalformedStoreEvent,
    RetiredPane,
    parse_retired_since,
    retired_after_spawn,
)

LEAF = str(uuid.UUID(int=7))
KEY = f"tab-1:{LEAF}"
T0_S = 1_800_000_000.0


def info(
    session_id: str, created_at: float, pane_key: str = KEY, host: str = "local"
) -> SessionInfo:
    return SessionInfo(
        session_id=session_id,
        worktree_id="repo1::/w/a",
        pane_key=pane_key,
        tab_id=pane_key.partition(":")[0],
        argv=["sh"],
        cwd="/",
        pid=1,
        cols=80,
        rows=24,
        launch_token_sha256="",
        created_at=created_at,
        host_id=host,
    )


def retired(at_ms: int, pane_key: str = KEY, host: str = "local") -> LoggedRetirement:
    return LoggedRetirement(RetiredPane(host, pane_key), at_ms)


def test_a_session_older_than_its_panes_retirement_is_ended() -> None:
    """The PTY of a pane retired while ptyd was down is ended after adoption."""
    infos = [info("old", T0_S), info("other", T0_S, pane_key=f"tab-2:{LEAF}")]
    assert retired_after_spawn(infos, [retired(int(T0_S * 1000) + 5)]) == {"old"}


def test_a_spawn_after_the_retirement_reused_the_key_and_lives_on() -> None:
    """A pane key retired before the session's creation does not end it (key reuse)."""
    infos = [info("new", T0_S + 1)]
    assert retired_after_spawn(infos, [retired(int(T0_S * 1000))]) == set()
    # The newest retirement of the key counts: reused, then retired again.
    later = [retired(int(T0_S * 1000)), retired(int(T0_S * 1000) + 2000)]
    assert retired_after_spawn(infos, later) == {"new"}


def test_a_retirement_on_another_host_ends_nothing_here() -> None:
    """The same pane key on another execution host is another pane."""
    infos = [info("here", T0_S)]
    assert retired_after_spawn(infos, [retired(int(T0_S * 1000) + 5, host="ssh:box")]) == set()


def test_the_store_answer_parses_into_logged_retirements() -> None:
    """session.retired_since entries become LoggedRetirements; malformed ones are skipped."""
    answer = {
        "revision": 3,
        "truncated": False,
        "panes": [
            {"tabId": "tab-1", "leafId": LEAF, "paneKey": KEY, "revision": 2, "retiredAtMs": 9},
            {"tabId": "tab-1", "leafId": LEAF, "revision": 3},
            {"tabId": "a:b", "leafId": LEAF, "revision": 3, "retiredAtMs": 1},
            7,
        ],
    }
    assert parse_retired_since(answer, "local") == [retired(9)]


def test_an_answer_without_panes_is_malformed() -> None:
    """The store is at fault when its answer has no panes list."""
    with pytest.raises(MalformedStoreEvent):
        parse_retired_since({"revision": 1}, "local")


@given(st.one_of(st.none(), st.integers(), st.text(), st.dictionaries(st.text(), st.integers())))
def test_any_answer_parses_or_is_refused_as_malformed(answer: object) -> None:
    """Whatever the store answers, the result is a list or MalformedStoreEvent."""
    try:
        assert isinstance(parse_retired_since(answer, "local"), list)
    except MalformedStoreEvent:
        pass
