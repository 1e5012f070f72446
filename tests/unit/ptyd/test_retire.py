"""Parsing store events and building retirement calls (ARCHITECTURE §3.2; seed 02 §9)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.ptyd.info import SessionInfo
from actors.ptyd.retire import (
    MalformedStoreEvent,
    RetiredPane,
    hooks_retire_args,
    parse_pane_retired,
    parse_renamed,
    store_retire_args,
)

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=8,
)
EVENT_KEYS = st.sampled_from(["hostId", "tabId", "leafId", "revision", "oldId", "newId", "x"])
EVENTISH = st.dictionaries(EVENT_KEYS, JSONISH) | JSONISH


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
def test_store_event_data_parses_or_is_refused_as_malformed(data: object) -> None:
    """Any event data yields a result or MalformedStoreEvent, never another error."""
    for parse in (parse_pane_retired, parse_renamed):
        try:
            parse(data)
        except MalformedStoreEvent:
            pass


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
    assert parse_pane_retired(data) == RetiredPane(host, f"{tab}:{leaf}")


@pytest.mark.parametrize(
    "data",
    [
        {"tabId": "t", "leafId": "l"},
        {"hostId": "local", "tabId": "a:b", "leafId": "l"},
        {"hostId": "local", "tabId": "", "leafId": "l"},
        {"hostId": "local", "tabId": "t", "leafId": 7},
        ["hostId", "local"],
    ],
)
def test_pane_retired_without_host_or_with_a_bad_tab_or_leaf_is_malformed(data: object) -> None:
    """A retirement that cannot name one pane on one host is refused, not guessed at."""
    with pytest.raises(MalformedStoreEvent):
        parse_pane_retired(data)


def test_store_retirement_of_a_uuid_pane_names_host_tab_and_leaf() -> None:
    """term.close asks the store to retire ``tabId``/``leafId`` on the session's host."""
    leaf = str(uuid.uuid4())
    info = info_with_pane(f"tab-1:{leaf}", host_id="ssh:box")
    assert store_retire_args(info) == {"hostId": "ssh:box", "tabId": "tab-1", "leafId": leaf}
    assert hooks_retire_args(info) == {"paneKey": f"tab-1:{leaf}"}


def test_legacy_numeric_pane_is_not_retired_in_the_store_but_is_fenced() -> None:
    """A legacy ``tab:3`` key has no leaf in the store's topology; hooks still fences it."""
    info = info_with_pane("tab-1:3")
    assert store_retire_args(info) is None
    assert hooks_retire_args(info) == {"paneKey": "tab-1:3"}
