"""Issue 16 item 6: a lone ``"\\ud800"`` in any hook field made ``orca worktree ps`` fail
for every worktree, across restarts.

JSON can spell a lone surrogate; no UTF-8 encoder (msgpack, the CLI's output) accepts
one. The hook endpoint now normalises text at the boundary (U+FFFD; identity fields
also lose control characters) and the status file is cleaned both ways, so a real
``orca worktree ps`` keeps working, before and after a restart, and on a file an older
build wrote with the escape in it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import trio
from support.hooks_harness import PANE, running_hooks
from support.procs import run_cli

from actors.hooks.actor import STATUS_FILE_NAME
from orca.paths import resolve_paths

LONE = "\ud800"
BAD = f"x{LONE}y\x1b[2J\n"
PANE_2 = "tab-2:3f1c2a9e-0000-4000-8000-000000000002"


def _ps(home: Path) -> list[dict[str, Any]]:
    """``orca worktree ps --json`` as a user runs it; its agents, flattened."""
    done = run_cli(home, "worktree", "ps", "--json", timeout=30)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    worktrees = json.loads(done.stdout)["worktrees"]
    return [agent for worktree in worktrees for agent in worktree["agents"]]


def _hook_body() -> bytes:
    """A Claude Notification with the lone surrogate in every string the row takes."""
    document = {
        "hook_event_name": "Notification",
        "notification_type": "permission_prompt",
        "message": BAD,
        "session_id": BAD,
        "orca": {"tabId": BAD, "worktreeId": f"repo1::/src/wt-{LONE}"},
        BAD: [BAD, {BAD: BAD}],
    }
    return json.dumps(document).encode()  # ensure_ascii: the escape "\ud800" on the wire


async def test_lone_surrogates_in_hook_fields_never_break_worktree_ps(orca_home: Path) -> None:
    """Surrogates in every row field from a hook: ps works live and after a restart."""
    with trio.fail_after(90):
        async with running_hooks(orca_home) as hooks:
            status, reply = await hooks.post(
                "claude",
                _hook_body(),
                pane=PANE,
                extra={"X-Orca-Worktree-Id": ""},  # the body's worktree id is used
            )
            assert (status, reply) == (200, {"outcome": "applied"})
            live = await trio.to_thread.run_sync(_ps, orca_home)
            assert [a["paneKey"] for a in live] == [PANE]
            assert live[0]["detail"] == "x\ufffdy\x1b[2J\n"  # payload text: surrogate only
            assert live[0]["state"] == "blocked"
            rows = await hooks.rows()
            # The row files its pane key's tab, never the tab name the hook stated (the
            # strict hydrate drops a row whose tab is not its key's: review 02-36).
            assert rows[0]["tabId"] == PANE.split(":", 1)[0]
            assert rows[0]["worktreeId"] == "repo1::/src/wt-\ufffd"
            assert rows[0]["sessionId"] == "x\ufffdy\x1b[2J\n"
        async with running_hooks(orca_home):
            restored = await trio.to_thread.run_sync(_ps, orca_home)
            assert [(a["paneKey"], a["detail"]) for a in restored] == [(PANE, "x\ufffdy\x1b[2J\n")]


async def test_status_file_written_with_a_lone_surrogate_restores_cleanly(
    orca_home: Path,
) -> None:
    """A last-status.json holding ``"\\ud800"`` escapes (older build) hydrates and ps works."""
    hooks_dir = resolve_paths({"ORCA_HOME": str(orca_home)}).hooks_dir
    hooks_dir.mkdir(parents=True, mode=0o700)
    now_ms = time.time_ns() // 1_000_000
    row = {
        "paneKey": PANE_2,
        "worktreeId": f"repo1::/src/{LONE}",
        "state": "working",
        "source": "hook",
        "updatedAtMs": now_ms,
        "stateSinceMs": now_ms,
        "agent": "claude",
        "tabId": "tab-2",
        "detail": BAD,
        "sessionId": LONE,
    }
    document = {"version": 1, "rows": [row], "launchTokenSha256": {}, "retiredPanes": []}
    (hooks_dir / STATUS_FILE_NAME).write_text(json.dumps(document))  # "\ud800" escapes
    with trio.fail_after(60):
        async with running_hooks(orca_home):
            agents = await trio.to_thread.run_sync(_ps, orca_home)
    assert [(a["paneKey"], a["detail"]) for a in agents] == [(PANE_2, "x\ufffdy\x1b[2J\n")]
    assert agents[0]["restoredUnconfirmed"] is True


async def test_a_lone_surrogate_in_an_osc_payload_never_breaks_a_reader(orca_home: Path) -> None:
    """`cat` of a file holding OSC 9999 with "\\ud800": the row is written clean, the
    snapshot (what every mirror and `orca worktree ps` read) encodes, and so does the file."""
    from orca.contracts import hooks as contract

    with trio.fail_after(60):
        async with running_hooks(orca_home) as hooks:
            payload = '{"state": "working", "agent": "claude", "detail": "x\\ud800y"}'
            reply = await hooks.invoke(
                contract.INGEST_OSC,
                contract.IngestOscArgs(pane_key=PANE_2, payload=payload, worktree_id="repo1::/wt"),
            )
            assert reply.outcome == "applied", reply
            rows = await hooks.rows()
            assert [(r["paneKey"], r["detail"]) for r in rows] == [(PANE_2, "x\ufffdy")]
        async with running_hooks(orca_home):
            pass  # hooks restarts over the file it wrote: it must start
