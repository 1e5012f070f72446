"""The model codec: unknown fields survive JSON and msgpack round trips (seed 01 §7.2, seed 02 §5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orca.model.codec import (
    EXTRA_WIRE_KEY,
    ModelDecodeError,
    decode_json,
    decode_msgpack,
    encode_json,
    encode_msgpack,
    from_builtins,
    to_builtins,
)
from orca.model.session import WorkspaceSessionState
from orca.model.state import PersistedState, default_persisted_state
from orca.model.tabs import Tab, TabGroup, TabGroupLeaf, TabGroupSplit
from orca.model.worktree import WorktreeMeta

from .strategies import persisted_states, unknown_fields


def _record_dicts(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Dicts of records at every level we promise to preserve, incl. nested layout nodes."""
    found: list[dict[str, Any]] = [state, state["settings"], state["ui"]]
    found.extend(state["worktreeMeta"].values())
    sessions = [state["workspaceSession"], *state["workspaceSessionsByHostId"].values()]
    found.extend(sessions)
    for s in sessions:
        for groups in s.get("tabGroups", {}).values():
            found.extend(groups)
        for tabs in s.get("unifiedTabs", {}).values():
            found.extend(tabs)
        stack = list(s.get("tabGroupLayouts", {}).values())
        while stack:
            node = stack.pop()
            found.append(node)
            if node["type"] == "split":
                stack += [node["first"], node["second"]]
    return found


def _inject(data: st.DataObject, builtins: dict[str, Any]) -> None:
    records = _record_dicts(builtins)
    extras = data.draw(st.lists(unknown_fields, min_size=len(records), max_size=len(records)))
    for record, extra in zip(records, extras, strict=True):
        record.update(extra)


Codec = tuple[Callable[[Any], bytes], Callable[[bytes], Any], Callable[[Any], bytes], Callable[..., Any]]
CODECS: dict[str, Codec] = {
    "json": (msgspec.json.encode, msgspec.json.decode, encode_json, decode_json),
    "msgpack": (msgspec.msgpack.encode, msgspec.msgpack.decode, encode_msgpack, decode_msgpack),
}


@pytest.mark.parametrize("fmt", sorted(CODECS))
@settings(max_examples=25, deadline=None)
@given(state=persisted_states(), data=st.data())
def test_persisted_state_with_unknown_fields_round_trips_unchanged(
    fmt: str, state: PersistedState, data: st.DataObject
) -> None:
    """Unknown fields at the top level, in metas, sessions, groups, tabs and layout nodes survive decode+encode (seed 02 §5)."""
    raw_enc, raw_dec, enc, dec = CODECS[fmt]
    written_by_newer_build = raw_dec(raw_enc(to_builtins(state)))
    _inject(data, written_by_newer_build)
    loaded = dec(PersistedState, raw_enc(written_by_newer_build))
    assert raw_dec(enc(loaded)) == written_by_newer_build


def test_unknown_fields_are_kept_in_extra_and_known_fields_decode() -> None:
    """A newer build's field lands in ``extra`` while known fields decode normally (seed 01 §7.3)."""
    meta = from_builtins(WorktreeMeta, {"displayName": "x", "linkedPR": 7, "futureBadge": [1, 2]})
    assert (meta.display_name, meta.linked_pr, meta.extra) == ("x", 7, {"futureBadge": [1, 2]})


def test_known_field_wins_over_an_extra_of_the_same_name() -> None:
    """Encoding never lets a stale ``extra`` entry overwrite a known field."""
    meta = WorktreeMeta(display_name="new", extra={"displayName": "old", "futureX": 1})
    assert to_builtins(meta) == {"displayName": "new", "futureX": 1}


def test_reserved_extra_key_in_input_round_trips() -> None:
    """A file that happens to contain the codec's reserved key still round-trips unchanged."""
    raw = {"displayName": "a", EXTRA_WIRE_KEY: {"weird": True}}
    assert to_builtins(from_builtins(WorktreeMeta, raw)) == raw


def test_decode_does_not_mutate_callers_builtins() -> None:
    """from_builtins leaves its input untouched (the store may keep the raw dict)."""
    raw = {"worktreeMeta": {"r::/p": {"futureY": 1}}, "futureZ": 2}
    before = msgspec.json.encode(raw)
    from_builtins(PersistedState, raw)
    assert msgspec.json.encode(raw) == before


def test_older_file_without_new_fields_gets_defaults() -> None:
    """A file from an older build (missing fields) decodes with defaults (seed 01 §7.2)."""
    state = decode_json(PersistedState, b'{"schemaVersion": 1, "repos": []}')
    assert state == default_persisted_state()


@pytest.mark.parametrize(
    "raw",
    [b"{not json", b'{"repos": 5}', b'{"worktreeMeta": {"a::/b": {"isPinned": "yes"}}}', b"[]"],
)
def test_malformed_or_invalid_json_raises_model_decode_error(raw: bytes) -> None:
    """Bad bytes are the data's fault: ModelDecodeError, never a crash of another kind."""
    with pytest.raises(ModelDecodeError):
        decode_json(PersistedState, raw)


def test_malformed_msgpack_raises_model_decode_error() -> None:
    """Truncated msgpack is reported as ModelDecodeError."""
    with pytest.raises(ModelDecodeError):
        decode_msgpack(PersistedState, encode_msgpack(default_persisted_state())[:-3])


def test_persisted_state_always_writes_schema_version() -> None:
    """``schemaVersion`` is on disk even at its default, so future builds can migrate (seed 01 §7.2)."""
    assert msgspec.json.decode(encode_json(default_persisted_state()))["schemaVersion"] == 1


def _big_state() -> PersistedState:
    metas = {
        f"{i:08d}-0000-4000-8000-000000000000::/home/u/orca/workspaces/repo/wt-{i}": WorktreeMeta(
            instance_id=f"inst-{i}",
            display_name=f"feature {i}",
            comment="c" * 40,
            linked_pr=i,
            sort_order=i,
            last_activity_at=1_700_000_000_000 + i,
            prior_worktree_ids=(f"r::/old/{i}",),
            extra={"futureField": i},
        )
        for i in range(1500)
    }
    wids = list(metas)[:30]
    tabs = {
        w: tuple(
            Tab(id=f"t{w[-4:]}{j}", entity_id=f"e{j}", group_id="g1", worktree_id=w, content_type="terminal")
            for j in range(10)
        )
        for w in wids
    }
    groups = {w: (TabGroup(id="g1", worktree_id=w, tab_order=tuple(t.id for t in tabs[w])),) for w in wids}
    layouts = {
        w: TabGroupSplit(direction="vertical", first=TabGroupLeaf(group_id="g1"), second=TabGroupLeaf(group_id="g2"))
        for w in wids
    }
    session = WorkspaceSessionState(unified_tabs=tabs, tab_groups=groups, tab_group_layouts=layouts)
    return PersistedState(worktree_meta=metas, workspace_session=session)


def test_large_state_round_trips() -> None:
    """1,500 worktreeMeta entries + 300 tabs round-trip exactly (their cost is in bench/store.py)."""
    state = _big_state()
    assert decode_json(PersistedState, encode_json(state)) == state


def test_enum_values_from_a_newer_build_do_not_make_the_file_unreadable() -> None:
    """A tab content type or repo kind this build does not know still loads and is written back (seed 01 §7.3)."""
    raw = {
        "repos": [{"id": "r", "path": "/p", "displayName": "p", "kind": "jj"}],
        "workspaceSession": {
            "unifiedTabs": {"r::/p": [{"id": "t", "entityId": "t", "groupId": "g", "worktreeId": "r::/p", "contentType": "agent-session"}]},
            "activeTabTypeByWorktree": {"r::/p": "database"},
        },
    }
    state = from_builtins(PersistedState, raw)
    assert (state.workspace_session.unified_tabs or {})["r::/p"][0].content_type == "agent-session"
    out = msgspec.json.decode(encode_json(state))
    assert out["repos"] == raw["repos"] and out["workspaceSession"] == raw["workspaceSession"]
