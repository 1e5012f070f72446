"""Issue 16 item 5 (hooks part): a full disk killed hooks - one hook event on a 2 MiB
tmpfs ``ORCA_HOME`` and the actor (then orcad and the agent) was gone.

On a real, full 2 MiB tmpfs the hooks actor now keeps serving: the agent's hook call is
answered, the rows stay in memory, ``sys.stats`` reports the refused writes
(``hooks.statusFile``, ``hooks.endpointFile``), and once space returns the files are
written again (the endpoint file by the actor's own retry, awaited with inotify).
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path
from typing import Any

import trio
from support.actors import running_actor
from support.hooks_harness import PANE, WT, post_hook, running_hooks
from support.tmpfs import fill, needs_tmpfs

from actors.hooks.actor import STATUS_FILE_NAME
from actors.hooks.endpoint_file import ENDPOINT_FILE_NAME, read_endpoint_env
from orca.contracts import hooks as contract
from orca.contracts import sys as sys_contract
from orca.paths import resolve_paths

PANE_2 = "tab-2:3f1c2a9e-0000-4000-8000-000000000002"
PANE_3 = "tab-3:3f1c2a9e-0000-4000-8000-000000000003"
IN_MOVED_TO = 0x80
IN_CLOSE_WRITE = 0x08


async def _wait_for_file(path: Path) -> None:
    """Until ``path`` exists (a rename or close in its directory wakes us: inotify)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert fd >= 0
    try:
        assert libc.inotify_add_watch(fd, bytes(path.parent), IN_MOVED_TO | IN_CLOSE_WRITE) >= 0
        while not await trio.Path(path).exists():
            await trio.lowlevel.wait_readable(fd)
            os.read(fd, 65536)
    finally:
        os.close(fd)


def _claude(event: str, **extra: object) -> dict[str, object]:
    return {"hook_event_name": event, "session_id": "s1", **extra}


@needs_tmpfs
async def test_full_disk_degrades_the_status_file_and_recovers(small_home: Path) -> None:
    """ENOSPC on last-status.json: hooks answers the agent, reports, and saves again later."""
    hooks_dir = resolve_paths({"ORCA_HOME": str(small_home)}).hooks_dir
    with trio.fail_after(60):
        async with running_hooks(small_home) as hooks:
            assert (await hooks.post("claude", _claude("UserPromptSubmit")))[0] == 200
            await hooks.invoke(contract.RETIRE_PANE, contract.RetirePaneArgs(pane_key=PANE_3))
            before = (hooks_dir / STATUS_FILE_NAME).read_bytes()
            filler = fill(small_home)

            status, reply = await hooks.post("claude", _claude("PreToolUse", tool_name="Bash"))
            assert (status, reply) == (200, {"outcome": "applied"})
            # A retirement flushes at once: its reply comes after the refused write.
            await hooks.invoke(contract.RETIRE_PANE, contract.RetirePaneArgs(pane_key=PANE_2))
            stats: dict[str, Any] = await hooks.invoke(sys_contract.STATS)
            health = stats["hooks"]["statusFile"]
            assert health["degraded"] is True and health["failures"] >= 1
            assert health["lastError"].startswith("ENOSPC")
            assert (hooks_dir / STATUS_FILE_NAME).read_bytes() == before  # old file whole
            rows = await hooks.rows()
            assert [(r["paneKey"], r["detail"]) for r in rows] == [(PANE, "Bash")]
            assert hooks.proc.poll() is None

            filler.unlink()
            await hooks.invoke(contract.RETIRE_PANE, contract.RetirePaneArgs(pane_key=PANE_3))
            stats = await hooks.invoke(sys_contract.STATS)
            assert stats["hooks"]["statusFile"]["degraded"] is False
            saved = json.loads((hooks_dir / STATUS_FILE_NAME).read_bytes())
            assert [r["detail"] for r in saved["rows"]] == ["Bash"]
            assert PANE_2 in {f["paneKey"] for f in saved["retiredPanes"]}


@needs_tmpfs
async def test_start_on_a_full_disk_serves_and_writes_the_endpoint_when_space_returns(
    small_home: Path,
) -> None:
    """A start on a full disk: ready, stale endpoint.env removed, rewritten by the retry."""
    hooks_dir = resolve_paths({"ORCA_HOME": str(small_home)}).hooks_dir
    endpoint = hooks_dir / ENDPOINT_FILE_NAME
    with trio.fail_after(60):
        async with running_hooks(small_home):
            pass  # installs the script and leaves this start's endpoint.env behind
        stale = endpoint.read_bytes()
        filler = fill(small_home)
        async with running_actor("hooks", small_home) as hooks:
            stats: dict[str, Any] = await hooks.invoke(sys_contract.STATS)
            health = stats["hooks"]["endpointFile"]
            assert health["degraded"] is True and health["lastError"].startswith("ENOSPC")
            assert not endpoint.exists()  # no agent is sent to the dead port
            assert stale  # (it was there before this start)
            assert (await hooks.invoke(sys_contract.PING)).pong is True

            filler.unlink()
            await _wait_for_file(endpoint)
            fields = read_endpoint_env(endpoint)
            port = (await hooks.invoke(contract.ENDPOINT)).port
            assert int(fields["ORCA_HOOK_PORT"]) == port
            # The writer's thread records the success just after the rename makes the
            # file visible (a CI run asked in between): ask again until it has; no
            # event says so, and the block's fail_after bounds it.
            while True:
                stats = await hooks.invoke(sys_contract.STATS)
                if stats["hooks"]["endpointFile"]["degraded"] is False:
                    break
                await trio.sleep(0.01)
            assert stats["hooks"]["endpointFile"]["writes"] >= 1
            body = json.dumps(_claude("UserPromptSubmit")).encode()
            status, _ = await post_hook(
                port,
                fields["ORCA_HOOK_SECRET"],
                "claude",
                body,
                {"X-Orca-Pane-Key": PANE, "X-Orca-Worktree-Id": WT},
            )
            assert status == 200
