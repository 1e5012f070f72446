"""The store contract's Structs enforce what its consumers rely on (issue 11)."""

from __future__ import annotations

import uuid

import msgspec
import pytest

from actors.store import retired_log, sessions
from orca.contracts import store
from orca.model.state import PersistedState
from orca.wire.errors import BadRequest

LEAF = str(uuid.UUID(int=1))
PANE = {"hostId": "local", "tabId": "t", "leafId": LEAF, "revision": 3}
ENTRY = {"tabId": "t", "leafId": LEAF, "paneKey": f"t:{LEAF}", "revision": 3, "retiredAtMs": 9}


def test_pane_retired_refuses_a_tab_id_with_a_colon_or_empty_ids() -> None:
    """``<tabId>:<leafId>`` splits at the first ':' only when tabId has none (orca.model.panes)."""
    assert store.PANE_RETIRED.decode(PANE) == store.PaneRetired(
        host_id="local", tab_id="t", leaf_id=LEAF, revision=3
    )
    for bad in ({"tabId": "t:x"}, {"tabId": ""}, {"leafId": ""}, {"hostId": ""}):
        with pytest.raises(msgspec.ValidationError):
            store.PANE_RETIRED.decode(PANE | bad)
    with pytest.raises(msgspec.ValidationError):
        store.PANE_RETIRED.decode({k: v for k, v in PANE.items() if k != "revision"})


def test_a_retired_entry_needs_both_its_revision_and_its_time() -> None:
    """Hooks orders catch-up by ``revision``, ptyd ages by ``retiredAtMs``: both required."""
    answer = {"hostId": "local", "revision": 3, "panes": [ENTRY], "truncated": False}
    decoded = store.SESSION_RETIRED_SINCE.decode_result(msgspec.msgpack.encode(answer))
    assert decoded.panes == [
        store.RetiredPane(
            tab_id="t", leaf_id=LEAF, pane_key=f"t:{LEAF}", revision=3, retired_at_ms=9
        )
    ]
    for missing in ("revision", "retiredAtMs"):
        entry = {k: v for k, v in ENTRY.items() if k != missing}
        with pytest.raises(msgspec.ValidationError):
            store.SESSION_RETIRED_SINCE.decode_result(
                msgspec.msgpack.encode(answer | {"panes": [entry]})
            )


def test_the_store_refuses_what_the_contract_refuses() -> None:
    """retire_pane's own check matches the TabId rule of the contract."""
    with pytest.raises(BadRequest):
        sessions.retire_session_pane(PersistedState(), None, "t:x", LEAF)
    with pytest.raises(BadRequest):
        sessions.retire_session_pane(PersistedState(), None, "t", "")


def test_logged_entries_keep_keys_this_build_does_not_know() -> None:
    """The log is part of orca-data.json: appending keeps a newer build's extra keys."""
    newer = ENTRY | {"reason": "closed"}
    state = PersistedState(
        topology_revision_by_host_id={"local": 3}, extra={retired_log.LOG_KEY: {"local": [newer]}}
    )
    appended = retired_log.append_retirement(state, "local", "t", str(uuid.UUID(int=2)), 4, 10)
    assert appended.extra[retired_log.LOG_KEY]["local"][0] == newer
    assert [p.revision for p in retired_log.host_log(appended, "local")] == [3, 4]


def test_identity_resolve_result_is_one_of_three_statuses() -> None:
    """current|alias|unknown; anything else from a peer is refused at decoding."""
    ok = {"status": "alias", "worktreeId": "r::/w"}
    raw = msgspec.msgpack.encode(ok)
    assert store.IDENTITY_RESOLVE.decode_result(raw) == store.IdentityResolved(
        status="alias", worktree_id="r::/w"
    )
    with pytest.raises(msgspec.ValidationError):
        store.IDENTITY_RESOLVE.decode_result(msgspec.msgpack.encode(ok | {"status": "gone"}))
