"""Store retirement events as ptyd decodes them, and the calls a close makes (§3.2)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.ptyd.actor import STORE_EVENTS
from actors.ptyd.info import SessionInfo
from actors.ptyd.retire import pane_key_of, store_retire_args
from orca.contracts import store
from orca.contracts.base import decode_event_data, specs_by_type
from orca.wire.envelope import Event

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=8,
)
EVENT_KEYS = st.sampled_from(["hostId", "tabId", "leafId", "revision", "oldId", "newId", "x"])
EVENTISH = st.dictionaries(EVENT_KEYS, JSONISH) | JSONISH
FOLLOWED = specs_by_type(STORE_EVENTS)


def event(type_: str, data: object) -> Event:
    return Event(1, "store", "e0", 1, type_, data)


def decode(type_: str, data: object) -> object:
    return decode_event_data(event(type_, data), FOLLOWED, consumer="test")


def info_with_pane(pane_key: str, host_id: str = "local") -> SessionInfo:
    return SessionInfo(
        session_id="repo1::/w/a@@0123abcd",
        worktree_id="repo1::/w/a",
        pane_key=pane_key,
        tab_id=pane_key.partition(":")[0],
        argv=["sh"],
        cwd="/",
        pid=1,
        cols=80,
        rows=24,
        launch_token_sha256="",
        host_id=host_id,
    )


@given(EVENTISH)
def test_store_event_data_decodes_or_is_dropped_as_malformed(data: object) -> None:
    """Any data of a followed store event yields its Struct or None, never an error."""
    for spec in STORE_EVENTS:
        decoded = decode(spec.type, data)
        assert decoded is None or isinstance(decoded, spec.data)


@given(
    st.text(min_size=1).filter(lambda t: ":" not in t),
    st.text(min_size=1),
    st.sampled_from(["local", "ssh:box", "runtime:r1"]),
    st.integers(min_value=0),
)
def test_pane_retired_names_the_pane_key_tab_colon_leaf(
    tab: str, leaf: str, host: str, revision: int
) -> None:
    """session.paneRetired {hostId, tabId, leafId} names pane ``tabId:leafId`` on that host."""
    data = {"hostId": host, "tabId": tab, "leafId": leaf, "revision": revision}
    decoded = decode(store.PANE_RETIRED.type, data)
    assert isinstance(decoded, store.PaneRetired) and decoded.host_id == host
    assert pane_key_of(decoded.tab_id, decoded.leaf_id) == f"{tab}:{leaf}"


@pytest.mark.parametrize(
    "data",
    [
        {"tabId": "t", "leafId": "l", "revision": 1},
        {"hostId": "local", "tabId": "a:b", "leafId": "l", "revision": 1},
        {"hostId": "local", "tabId": "", "leafId": "l", "revision": 1},
        {"hostId": "local", "tabId": "t", "leafId": 7, "revision": 1},
        ["hostId", "local"],
    ],
)
def test_pane_retired_without_host_or_with_a_bad_tab_or_leaf_is_malformed(data: object) -> None:
    """A retirement that cannot name one pane on one host is refused, not guessed at."""
    assert decode(store.PANE_RETIRED.type, data) is None


@pytest.mark.parametrize(
    "data", [{"oldId": "a"}, {"oldId": "", "newId": "b"}, {"oldId": 1, "newId": "b"}]
)
def test_renamed_without_both_ids_is_malformed(data: object) -> None:
    """worktree.renamed needs two non-empty ids (no ``"None"`` key is ever made up)."""
    assert decode(store.WORKTREE_RENAMED.type, data) is None


def test_store_retirement_of_a_uuid_pane_names_host_tab_and_leaf() -> None:
    """term.close asks the store to retire ``tabId``/``leafId`` on the session's host."""
    leaf = str(uuid.uuid4())
    info = info_with_pane(f"tab-1:{leaf}", host_id="ssh:box")
    assert store_retire_args(info) == store.RetirePaneArgs(
        host_id="ssh:box", tab_id="tab-1", leaf_id=leaf
    )


def test_legacy_numeric_pane_is_not_retired_in_the_store() -> None:
    """A legacy ``tab:3`` key has no leaf in the store's topology (hooks still fences it)."""
    assert store_retire_args(info_with_pane("tab-1:3")) is None
