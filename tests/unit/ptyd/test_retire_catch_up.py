"""Which adopted sessions a replayed retirement log ends (ARCHITECTURE §3.2)."""

from __future__ import annotations

import uuid

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.ptyd.info import SessionInfo
from actors.ptyd.retire import retired_after_spawn
from orca.contracts import store

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


def entry(at_ms: int, pane_key: str = KEY) -> store.RetiredPane:
    tab, _, leaf = pane_key.partition(":")
    return store.RetiredPane(
        tab_id=tab, leaf_id=leaf, pane_key=pane_key, revision=1, retired_at_ms=at_ms
    )


def log(*entries: store.RetiredPane, host: str = "local") -> store.RetiredSince:
    return store.RetiredSince(
        host_id=host, revision=len(entries), panes=list(entries), truncated=False
    )


def test_a_session_older_than_its_panes_retirement_is_ended() -> None:
    """The PTY of a pane retired while ptyd was down is ended after adoption."""
    infos = [info("old", T0_S), info("other", T0_S, pane_key=f"tab-2:{LEAF}")]
    assert retired_after_spawn(infos, log(entry(int(T0_S * 1000) + 5))) == {"old"}


def test_a_spawn_after_the_retirement_reused_the_key_and_lives_on() -> None:
    """A pane key retired before the session's creation does not end it (key reuse)."""
    infos = [info("new", T0_S + 1)]
    assert retired_after_spawn(infos, log(entry(int(T0_S * 1000)))) == set()
    # The newest retirement of the key counts: reused, then retired again.
    later = log(entry(int(T0_S * 1000)), entry(int(T0_S * 1000) + 2000))
    assert retired_after_spawn(infos, later) == {"new"}


def test_a_retirement_on_another_host_ends_nothing_here() -> None:
    """The same pane key on another execution host is another pane."""
    infos = [info("here", T0_S)]
    assert retired_after_spawn(infos, log(entry(int(T0_S * 1000) + 5), host="ssh:box")) == set()


def test_the_store_answer_decodes_into_logged_retirements() -> None:
    """A session.retired_since reply decodes (the store contract) into its entries."""
    answer = {
        "hostId": "local",
        "revision": 3,
        "truncated": False,
        "panes": [
            {"tabId": "tab-1", "leafId": LEAF, "paneKey": KEY, "revision": 2, "retiredAtMs": 9}
        ],
    }
    decoded = store.SESSION_RETIRED_SINCE.decode_result(msgspec.msgpack.encode(answer))
    assert decoded.host_id == "local" and decoded.revision == 3
    assert decoded.panes == [
        store.RetiredPane(tab_id="tab-1", leaf_id=LEAF, pane_key=KEY, revision=2, retired_at_ms=9)
    ]


@pytest.mark.parametrize(
    "panes",
    [
        [{"tabId": "tab-1", "leafId": LEAF, "paneKey": KEY, "revision": 3}],
        [{"tabId": "a:b", "leafId": LEAF, "paneKey": KEY, "revision": 3, "retiredAtMs": 1}],
        [7],
    ],
)
def test_an_answer_with_a_malformed_entry_is_refused(panes: list[object]) -> None:
    """An entry without ``retiredAtMs`` (or with a bad tab) is the store's fault: refused."""
    answer = {"hostId": "local", "revision": 3, "truncated": False, "panes": panes}
    with pytest.raises(msgspec.ValidationError):
        store.SESSION_RETIRED_SINCE.decode_result(msgspec.msgpack.encode(answer))


@given(
    st.one_of(
        st.none(),
        st.integers(-(2**63), 2**63 - 1),
        st.text(),
        st.dictionaries(st.text(), st.integers(0, 2**32)),
    )
)
def test_any_answer_decodes_or_is_refused(answer: object) -> None:
    """Whatever the store answers, the result is its Struct or a ValidationError."""
    try:
        decoded = store.SESSION_RETIRED_SINCE.decode_result(msgspec.msgpack.encode(answer))
    except msgspec.ValidationError:
        return
    assert isinstance(decoded, store.RetiredSince)
