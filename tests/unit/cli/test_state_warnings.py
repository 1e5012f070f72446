"""What `orca status` tells a person about the actors' files (pure projections of sys.stats)."""

from __future__ import annotations

from orca.cli.state import hooks_warnings, ptyd_warnings


def test_a_healthy_hooks_actor_warns_about_nothing() -> None:
    """No degradation, no damage, no eviction: no line."""
    stats = {
        "hooks": {
            "statusFile": {"degraded": False, "load": {"keptAside": None}},
            "endpointFile": {"degraded": False},
            "http": {"evicted": 0, "maxConnections": 128},
        }
    }
    assert hooks_warnings(stats) == []


def test_a_full_disk_a_damaged_file_and_a_flood_are_each_reported() -> None:
    """Each degradation the hooks actor reports becomes one line naming its cause."""
    stats = {
        "hooks": {
            "statusFile": {
                "degraded": True,
                "lastError": "ENOSPC: No space left on device",
                "load": {"keptAside": "/x/last-status.json.damaged-1", "damage": "bad_json"},
            },
            "endpointFile": {"degraded": True, "lastError": "EIO"},
            "http": {"evicted": 7, "maxConnections": 128},
        }
    }
    lines = hooks_warnings(stats)
    assert len(lines) == 4
    assert "ENOSPC" in lines[0] and "endpoint.env" in lines[1]
    assert "bad_json" in lines[2] and "damaged-1" in lines[2] and "7" in lines[3]


def test_an_older_hooks_actor_without_these_keys_warns_about_nothing() -> None:
    """Missing keys (another build) are no warning and no crash."""
    assert hooks_warnings({}) == [] and hooks_warnings({"hooks": {"statusFile": None}}) == []


def test_a_degraded_terminal_history_is_one_line_naming_the_sessions_and_the_cause() -> None:
    """ptyd's journal on a full disk: said once, with the count, the error and the bytes."""
    stats = {"ptyd": {"history": {"degraded": 2, "lastError": "ENOSPC", "droppedBytes": 4096}}}
    (line,) = ptyd_warnings(stats)
    assert "2 session" in line and "ENOSPC" in line and "4096" in line
    assert ptyd_warnings({"ptyd": {"history": {"degraded": 0}}}) == [] and ptyd_warnings({}) == []
