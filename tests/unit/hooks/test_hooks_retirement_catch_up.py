"""Replaying the store's retirement log in hooks: cursor and the typed answer (§3.2)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.hooks.retirement_cursor import RetirementCursor
from actors.hooks.status_file import decode_status_file, encode_status_file
from actors.hooks.store_follower import FOLLOWED, wanted_retirements
from orca.contracts import store
from orca.contracts.base import decode_event_data, specs_by_type
from orca.wire.envelope import Event

LEAF = "3f1c2a9e-0000-4000-8000-000000000001"


def test_live_retirements_in_order_advance_the_cursor() -> None:
    """Consecutive live revisions move the cursor and ask for no replay."""
    cursor = RetirementCursor(3)
    assert not cursor.on_live(4) and not cursor.on_live(5)
    assert cursor.revision == 5 and not cursor.wants(5) and cursor.wants(6)


def test_a_gap_asks_for_a_replay_that_skips_the_live_one() -> None:
    """A live event past a gap is applied once: the replay fills only the missing ones."""
    cursor = RetirementCursor(3)
    assert cursor.on_live(6)
    assert cursor.revision == 3
    assert [r for r in (4, 5, 6) if cursor.wants(r)] == [4, 5]
    cursor.settle(6)
    assert cursor.revision == 6 and cursor.ahead == set()


def test_settle_follows_a_store_whose_revision_went_back() -> None:
    """A reset store (lower revision) becomes the new baseline; later ones are wanted."""
    cursor = RetirementCursor(9)
    cursor.settle(2)
    assert cursor.revision == 2 and cursor.wants(3)


def _pane(revision: int, tab: str = "t") -> dict[str, object]:
    return {
        "tabId": tab,
        "leafId": LEAF,
        "paneKey": f"{tab}:{LEAF}",
        "revision": revision,
        "retiredAtMs": 1,
    }


def test_replay_applies_only_the_retirements_not_applied_yet() -> None:
    """session.retired_since decodes with the store contract; applied revisions are skipped."""
    answer = {"hostId": "local", "revision": 7, "truncated": False, "panes": [_pane(5), _pane(6)]}
    typed = store.SESSION_RETIRED_SINCE.decode_result(msgspec.msgpack.encode(answer))
    cursor = RetirementCursor(5)
    assert [p.revision for p in wanted_retirements(cursor, typed)] == [6]


def test_a_replay_entry_with_a_malformed_pane_fails_the_whole_answer() -> None:
    """A tab id with ':' (or an empty one) is the store's fault: the answer is refused."""
    answer = {"hostId": "local", "revision": 7, "truncated": False, "panes": [_pane(7, "a:b")]}
    with pytest.raises(msgspec.ValidationError):
        store.SESSION_RETIRED_SINCE.decode_result(msgspec.msgpack.encode(answer))


@given(
    st.one_of(
        st.none(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.text(),
        st.dictionaries(st.text(), st.text()),
    )
)
def test_an_answer_without_a_revision_is_refused(answer: object) -> None:
    """Anything but a full RetiredSince is a ValidationError, never anything else."""
    with pytest.raises(msgspec.ValidationError):
        store.SESSION_RETIRED_SINCE.decode_result(msgspec.msgpack.encode(answer))


def test_live_event_carries_its_revision() -> None:
    """session.paneRetired's revision reaches the follower; one without it is malformed."""
    data: dict[str, object] = {"hostId": "local", "tabId": "t", "leafId": LEAF, "revision": 4}
    event = Event(v=1, src="store", epoch="e", seq=1, type=store.PANE_RETIRED.type, data=data)
    specs = specs_by_type(FOLLOWED)
    assert decode_event_data(event, specs, consumer="test") == store.PaneRetired(
        host_id="local", tab_id="t", leaf_id=LEAF, revision=4
    )
    del data["revision"]
    assert decode_event_data(event, specs, consumer="test") is None


@given(st.integers(min_value=0, max_value=2**53))
def test_applied_revision_survives_the_status_file(revision: int) -> None:
    """The applied store revision is saved with the fences and read back (§3.2)."""
    data = encode_status_file([], {}, [], revision)
    assert decode_status_file(data, 0).store_revision == revision


def test_a_status_file_without_a_revision_replays_everything() -> None:
    """An older file (no storeRevision) or a bad value loads as revision 0."""
    assert decode_status_file(b'{"version":1,"rows":[]}', 0).store_revision == 0
    bad = b'{"version":1,"rows":[],"storeRevision":-3}'
    assert decode_status_file(bad, 0).store_revision == 0
