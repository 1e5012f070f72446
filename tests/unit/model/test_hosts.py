"""ExecutionHostId parsing, formatting and the worktree host precedence (seed 01 §4.6)."""

from __future__ import annotations

import pytest
from hypothesis import given

from orca.model.hosts import (
    LOCAL_HOST_ID,
    BadExecutionHostId,
    ParsedHostId,
    format_execution_host_id,
    is_execution_host_id,
    parse_execution_host_id,
    repo_execution_host_id,
    runtime_host_id,
    ssh_host_id,
    worktree_execution_host_id,
)

from .strategies import nonempty_text


@given(nonempty_text)
def test_ssh_and_runtime_host_ids_round_trip(target: str) -> None:
    """``ssh:<urlenc>`` and ``runtime:<urlenc>`` parse back to the original target (seed 01 §4.6)."""
    for make, kind in ((ssh_host_id, "ssh"), (runtime_host_id, "runtime")):
        host_id = make(target)
        parsed = parse_execution_host_id(host_id)
        assert parsed == ParsedHostId(kind, target)  # type: ignore[arg-type]
        assert format_execution_host_id(parsed) == host_id


def test_local_host_id_parses() -> None:
    """``'local'`` is this machine (seed 01 §4.6)."""
    assert parse_execution_host_id(LOCAL_HOST_ID) == ParsedHostId("local")
    assert format_execution_host_id(ParsedHostId("local")) == "local"


def test_encoding_matches_encode_uri_component() -> None:
    """Targets are encoded like JavaScript's encodeURIComponent, so ids match the original product's files."""
    assert ssh_host_id("me@box:22/x y") == "ssh:me%40box%3A22%2Fx%20y"
    assert runtime_host_id("vm-1_(a)!~*'.") == "runtime:vm-1_(a)!~*'."
    assert ssh_host_id("服务器") == "ssh:%E6%9C%8D%E5%8A%A1%E5%99%A8"


@pytest.mark.parametrize(
    "bad",
    ["", "Local", "ssh:", "runtime:", "ssh:%", "ssh:%zz", "ssh:%E6%9C", "runtime:%FF", "tcp:x", None],
)
def test_invalid_host_ids_including_failed_percent_decoding_are_rejected(bad: str | None) -> None:
    """A value whose percent-decoding fails is invalid, never silently local (seed 01 §4.6)."""
    assert parse_execution_host_id(bad) is None
    assert not is_execution_host_id(bad)


def test_empty_targets_cannot_be_built() -> None:
    """An SSH or runtime host id needs a target."""
    with pytest.raises(BadExecutionHostId):
        ssh_host_id("")
    with pytest.raises(BadExecutionHostId):
        runtime_host_id("")


def test_worktree_own_host_wins_over_repo() -> None:
    """The worktree's own host id beats every repo fallback (seed 01 §4.6 precedence)."""
    assert worktree_execution_host_id("runtime:vm", "ssh:a", "b") == "runtime:vm"


def test_repo_execution_host_id_beats_connection_id() -> None:
    """Without a worktree host, ``repo.executionHostId`` beats ``repo.connectionId`` (seed 01 §4.6)."""
    assert worktree_execution_host_id(None, "runtime:env", "target") == "runtime:env"


def test_connection_id_means_ssh() -> None:
    """A repo with only a connectionId runs on ``ssh:<connectionId>`` (seed 01 §4.6)."""
    assert worktree_execution_host_id(None, None, "my box") == "ssh:my%20box"
    assert repo_execution_host_id(None, "my box") == "ssh:my%20box"


def test_no_host_information_means_local() -> None:
    """With nothing set the host is local (seed 01 §4.6)."""
    assert worktree_execution_host_id(None, None, None) == "local"


def test_invalid_host_ids_fall_through_to_the_next_source() -> None:
    """A corrupt host id on the worktree or repo is skipped, not trusted."""
    assert worktree_execution_host_id("ssh:%zz", "bogus", "t") == "ssh:t"
