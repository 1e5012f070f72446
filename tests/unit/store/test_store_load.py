"""Loading orca-data.json: defaults, guarded migrations, per-partition validation,
unknown fields (seed 02 §3, §5, §7, §8)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.store.load import (
    EXTERNAL_VISIBILITY_MARKER,
    LOCAL_PARTITION_MARKER,
    LoadedState,
    decode_state,
    fresh_state,
)
from orca.model.codec import encode_json
from orca.model.layout import iter_terminal_leaf_ids
from orca.model.panes import is_terminal_leaf_id


def load(doc: dict[str, Any]) -> LoadedState:
    return decode_state(
        json.dumps(doc).encode(), home_dir="/home/u", mint=lambda: str(uuid.uuid4())
    )


def test_missing_fields_take_defaults_and_workspace_dir_comes_from_home() -> None:
    """An almost empty file loads with every default filled in."""
    loaded = load({"repos": []})
    assert loaded.state.settings.workspace_dir == "/home/u/orca/workspaces"
    assert loaded.state.worktree_meta == {} and loaded.problems == ()


def test_unknown_top_level_and_nested_keys_survive_a_round_trip() -> None:
    """Keys written by a newer build come back out when this build saves."""
    doc = {
        "sshTargets": [{"id": "s"}],
        "automations": [],
        "repos": [{"id": "r", "path": "/r", "displayName": "r", "newThing": 1}],
        "workspaceSession": {"futureSessionField": {"a": 1}},
    }
    out = json.loads(encode_json(load(doc).state))
    assert out["sshTargets"] == [{"id": "s"}] and out["automations"] == []
    assert out["repos"][0]["newThing"] == 1
    assert out["workspaceSession"]["futureSessionField"] == {"a": 1}


def test_a_corrupt_host_partition_is_dropped_not_the_file() -> None:
    """One bad partition (or invalid host id) is reported and dropped; the rest loads."""
    doc = {
        "repos": [{"id": "r", "path": "/r", "displayName": "r"}],
        "workspaceSessionsByHostId": {
            "ssh:good": {"activeTabId": "ok"},
            "ssh:bad": {"unifiedTabs": "not a map"},
            "ssh:%zz": {},
        },
    }
    loaded = load(doc)
    assert list(loaded.state.workspace_sessions_by_host_id) == ["ssh:good"]
    assert len(loaded.problems) == 2 and loaded.state.repos[0].id == "r"


def test_a_corrupt_local_session_falls_back_to_an_empty_one() -> None:
    """The bare local partition is validated alone too."""
    loaded = load({"workspaceSession": {"tabGroups": 7}, "repos": []})
    assert loaded.state.workspace_session.tab_groups is None
    assert loaded.problems and "workspaceSession" in loaded.problems[0]


@pytest.mark.parametrize("raw", [b"[]", b'"x"', b"{", b'{"repos": 5}'])
def test_a_top_level_that_does_not_decode_is_a_corrupt_file(raw: bytes) -> None:
    """Those raise ValueError so durable_load falls back to a backup."""
    with pytest.raises(ValueError):
        decode_state(raw, home_dir="/h", mint=lambda: "x")


def test_external_visibility_migration_runs_once_and_respects_later_choices() -> None:
    """The legacy boolean maps once; with the marker set a later choice is left alone."""
    repo = {"id": "r", "path": "/r", "displayName": "r", "externalWorktreeVisibilityLegacy": True}
    first = load({"repos": [repo]})
    assert first.state.repos[0].external_worktree_visibility == "show"
    assert EXTERNAL_VISIBILITY_MARKER in first.migrations
    # The user later cleared the choice (None): a second load must not re-derive it.
    doc = json.loads(encode_json(first.state))
    doc["repos"][0].pop("externalWorktreeVisibility")
    second = load(doc)
    assert second.state.repos[0].external_worktree_visibility is None
    assert second.migrations == ()


def test_local_partition_leftover_moves_to_the_bare_field_only_when_empty() -> None:
    """A 'local' entry in the by-host map is adopted only over an empty bare field."""
    adopted = load({"workspaceSessionsByHostId": {"local": {"activeTabId": "L"}}})
    assert adopted.state.workspace_session.active_tab_id == "L"
    assert "local" not in adopted.state.workspace_sessions_by_host_id
    kept = load(
        {
            "workspaceSession": {"activeTabId": "bare"},
            "workspaceSessionsByHostId": {"local": {"activeTabId": "L"}},
        }
    )
    assert kept.state.workspace_session.active_tab_id == "bare"


def test_fresh_state_needs_no_migration() -> None:
    """A first start marks every migration done, so a later load runs none."""
    reloaded = load(json.loads(encode_json(fresh_state(home_dir="/h"))))
    assert reloaded.migrations == () and LOCAL_PARTITION_MARKER in reloaded.state.extra


def test_load_remints_numeric_leaves_in_every_partition() -> None:
    """Old files with numeric pane leaves load with UUID leaves (seed 02 §8)."""
    layout = {"t": {"root": {"type": "leaf", "leafId": "0"}, "ptyIdsByLeafId": {"0": "p"}}}
    loaded = load(
        {
            "workspaceSession": {"terminalLayoutsByTabId": layout},
            "workspaceSessionsByHostId": {"ssh:x": {"terminalLayoutsByTabId": layout}},
        }
    )
    for session in (
        loaded.state.workspace_session,
        loaded.state.workspace_sessions_by_host_id["ssh:x"],
    ):
        snap = session.terminal_layouts_by_tab_id["t"]
        (leaf,) = iter_terminal_leaf_ids(snap.root)
        assert is_terminal_leaf_id(leaf) and snap.pty_ids_by_leaf_id == {leaf: "p"}


def json_containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=3) | st.dictionaries(
        st.text(max_size=5), children, max_size=3
    )


# JSON values nested up to three containers deep, built level by level. Not
# ``st.recursive``: hypothesis checks its extend function by re-reading this file's
# source, and warns (an error here) when the file changed on disk during the run.
json_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5)
json_values: st.SearchStrategy[Any] = json_scalars
for _depth in range(3):
    json_values = json_scalars | json_containers(json_values)

# Unknown top-level keys: an "x" prefix keeps clear of every field PersistedState knows.
unknown_keys = st.text(max_size=7).map(lambda rest: "x" + rest)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(unknown_keys, json_values, max_size=4))
def test_load_save_load_is_stable_for_any_unknown_top_level_keys(extra: dict[str, Any]) -> None:
    """Whatever unknown keys a file has, saving what was loaded and loading again is a fixpoint."""
    first = load({"repos": [], **extra})
    encoded = encode_json(first.state)
    second = decode_state(encoded, home_dir="/home/u", mint=lambda: "unused")
    assert encode_json(second.state) == encoded
    for key, value in extra.items():
        assert json.loads(encoded)[key] == value
