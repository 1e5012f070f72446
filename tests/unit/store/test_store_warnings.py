"""``orca.cli.state.store_warnings``: what a person must be told about the state file."""

from __future__ import annotations

from orca.cli.state import store_warnings


def test_healthy_store_has_no_warnings() -> None:
    """A primary load and working saves say nothing."""
    stats = {
        "store": {"load": {"source": "primary", "stateProblems": []}, "save": {"lastError": None}}
    }
    assert store_warnings(stats) == []


def test_recovery_dropped_partition_and_failing_saves_are_all_reported() -> None:
    """Backup recovery, a dropped host partition and ENOSPC each get a line."""
    stats = {
        "store": {
            "load": {
                "source": "backup",
                "loadedFrom": "orca-data.json.bak.1",
                "corruptKeptAs": "orca-data.json.corrupt-X",
                "stateProblems": ["workspaceSessionsByHostId['ssh:a']: dropped"],
            },
            "save": {"lastError": {"errno": "ENOSPC", "message": "No space left on device"}},
        }
    }
    lines = store_warnings(stats)
    assert len(lines) == 3
    assert "orca-data.json.bak.1" in lines[0] and "orca-data.json.corrupt-X" in lines[0]
    assert "ssh:a" in lines[1] and "ENOSPC" in lines[2]


def test_no_valid_copy_says_defaults_were_used() -> None:
    """When nothing parsed, the user learns the state started from defaults."""
    stats = {"store": {"load": {"source": "no_valid_copy", "corruptKeptAs": "c"}, "save": {}}}
    assert "started from defaults" in store_warnings(stats)[0]
