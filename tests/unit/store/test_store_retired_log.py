"""The bounded retirement log and ``session.retired_since`` (ARCHITECTURE §3.2 catch-up)."""

from __future__ import annotations

import json
import uuid

from hypothesis import given
from hypothesis import strategies as st

from actors.store import retired_log, sessions
from actors.store.load import decode_state, fresh_state
from orca.model.codec import encode_json, to_builtins
from orca.model.state import PersistedState

LEAVES = [str(uuid.UUID(int=i)) for i in range(1, 2000)]


def retire_many(state: PersistedState, count: int, host: str | None = None) -> PersistedState:
    for i in range(count):
        state = sessions.retire_session_pane(state, host, "t", LEAVES[i], now_ms=1000 + i).state
    return state


def test_retirement_is_logged_with_its_revision_and_time() -> None:
    """retire_pane appends {tabId, leafId, paneKey, revision, retiredAtMs} in the same change."""
    change = sessions.retire_session_pane(PersistedState(), None, "t", LEAVES[0], now_ms=42)
    answer = retired_log.retired_since(change.state, "local", 0)
    assert to_builtins(answer) == {
        "hostId": "local",
        "revision": 1,
        "panes": [
            {
                "tabId": "t",
                "leafId": LEAVES[0],
                "paneKey": f"t:{LEAVES[0]}",
                "revision": 1,
                "retiredAtMs": 42,
            }
        ],
        "truncated": False,
    }
    assert change.durability == "flush"


def test_retired_since_returns_only_newer_entries() -> None:
    """Entries at or below the caller's revision are already applied and left out."""
    state = retire_many(PersistedState(), 5)
    answer = retired_log.retired_since(state, "local", 3)
    assert [p.revision for p in answer.panes] == [4, 5]
    assert answer.revision == 5 and not answer.truncated
    assert retired_log.retired_since(state, "local", 5).panes == []


def test_logs_are_per_host() -> None:
    """A retirement on one host never shows up in another host's catch-up."""
    state = retire_many(PersistedState(), 2, host="ssh:box")
    assert to_builtins(retired_log.retired_since(state, "local", 0)) == {
        "hostId": "local",
        "revision": 0,
        "panes": [],
        "truncated": False,
    }
    assert len(retired_log.retired_since(state, "ssh:box", 0).panes) == 2


def test_log_is_bounded_and_reports_truncation() -> None:
    """Past 1024 entries the oldest fall off; a caller behind them hears truncated=true."""
    count = retired_log.MAX_ENTRIES_PER_HOST + 3
    state = retire_many(PersistedState(), count)
    assert len(retired_log.host_log(state, "local")) == retired_log.MAX_ENTRIES_PER_HOST
    behind = retired_log.retired_since(state, "local", 0)
    assert behind.truncated and behind.panes[0].revision == 4
    assert not retired_log.retired_since(state, "local", 3).truncated


def test_a_revision_without_a_log_is_truncated() -> None:
    """A revision bumped by a build without the log cannot be caught up: truncated."""
    state = PersistedState(topology_revision_by_host_id={"local": 7})
    assert retired_log.retired_since(state, "local", 2).truncated
    assert not retired_log.retired_since(state, "local", 7).truncated


def test_log_survives_a_save_and_load() -> None:
    """The log is part of orca-data.json: a store restart still answers retired_since."""
    state = retire_many(fresh_state(home_dir="/h"), 3)
    reloaded = decode_state(encode_json(state), home_dir="/h", mint=lambda: "unused").state
    assert retired_log.retired_since(reloaded, "local", 1) == retired_log.retired_since(
        state, "local", 1
    )
    assert "retiredPanesByHostId" in json.loads(encode_json(state))


@given(
    st.lists(
        st.one_of(st.integers(), st.text(), st.none(), st.dictionaries(st.text(), st.integers()))
    )
)
def test_hand_edited_log_entries_are_skipped(junk: list[object]) -> None:
    """Malformed entries in the file are ignored, never raised on."""
    state = PersistedState(extra={"retiredPanesByHostId": {"local": junk}})
    assert retired_log.retired_since(state, "local", 0).panes == []
    appended = retired_log.append_retirement(state, "local", "t", LEAVES[0], 1, 5)
    assert len(retired_log.host_log(appended, "local")) == 1
