"""The check command: its exit code and the tail of its output, in the worktree; a
command that hangs is ended with its whole process group."""

from __future__ import annotations

from pathlib import Path

import trio

from actors.orch.checks import TIMED_OUT, run_check
from orca.contracts.orch import CHECK_TAIL_CHARS


async def test_exit_code_and_output_tail_from_the_worktree(tmp_path: Path) -> None:
    """The command runs in the directory given; stdout and stderr both land in the tail,
    which keeps the end of a long output."""
    (tmp_path / "marker").write_text("here\n")
    with trio.fail_after(20):
        ok = await run_check("cat marker; echo oops >&2", str(tmp_path))
        failed = await run_check("seq 1 5000; exit 3", str(tmp_path))
    assert (ok.exit_code, ok.tail) == (0, "here\noops\n")
    assert failed.exit_code == 3
    assert len(failed.tail) <= CHECK_TAIL_CHARS and failed.tail.endswith("4999\n5000\n")


async def test_a_hanging_check_is_ended_with_its_children(tmp_path: Path) -> None:
    """A timeout kills the command's whole group and says so in the tail."""
    with trio.fail_after(20):
        outcome = await run_check("sleep 60 & sleep 60", str(tmp_path), timeout_s=0.5)
    assert outcome.exit_code == TIMED_OUT and "timed out" in outcome.tail
