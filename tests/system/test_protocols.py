"""The three explicit protocols (ARCHITECTURE §3) end to end, over the real tree.

See docs/protocols.md for the message sequences these tests follow.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import trio
from support.journey import (
    User,
    hooks_mirror,
    hooks_rows,
    make_git_repo,
    recorded,
    rows_by_pane,
)
from support.lifecycle import lifecycle
from support.procs import alive, write_config

from orca.actor import open_rpc_client
from orca.actor.mirror import Mirror
from orca.contracts import hooks as hooks_contract
from orca.contracts import ptyd as ptyd_contract
from orca.contracts import store as store_contract
from orca.contracts import supervisor as sup
from orca.model.agent_status import AgentStatusRow

LATE_AGENT = Path(__file__).resolve().parents[1] / "fixtures" / "support" / "late_agent.sh"
# Session GC timing for the test tree: ptyd re-resolves every GC_INTERVAL_S and reaps
# an unknown worktree's sessions no sooner than GC_GRACE_S after the first "unknown".
GC_GRACE_S = 3.0
GC_INTERVAL_S = 0.3


def setup_user(orca_home: Path, tmp_path: Path, **env: str) -> tuple[User, dict[str, Any]]:
    """A running tree with one git repo added; returns the user and the repo record."""
    user = User(orca_home, tmp_path / "user")
    user.env.update(env)
    project = make_git_repo(tmp_path / "project")
    user.ok("up")
    user.ok("repo", "add", str(project))
    (repo,) = user.json("repo", "ls")["repos"]
    return user, repo


def create_worktree(user: User, repo: dict[str, Any], name: str) -> str:
    created = user.json("worktree", "create", repo["id"], name, "--setup", "skip")
    return str(created["worktree"]["worktreeId"])


# -- 1. session GC -------------------------------------------------------------------


async def test_unknown_worktree_reaped_after_grace_renamed_never(
    orca_home: Path, tmp_path: Path
) -> None:
    """Only a worktree the store does not know is reaped, after the grace; a renamed one never (§3.1)."""
    with trio.fail_after(90):
        user, repo = setup_user(
            orca_home,
            tmp_path,
            ORCA_PTYD_GC_GRACE_S=str(GC_GRACE_S),
            ORCA_PTYD_GC_INTERVAL_S=str(GC_INTERVAL_S),
        )
        known = create_worktree(user, repo, "kept")
        renamed = create_worktree(user, repo, "moving")
        stray_dir = tmp_path / "stray"
        stray_dir.mkdir()
        stray = f"{uuid.uuid4()}::{stray_dir}"
        async with recorded(orca_home, ptyd_contract.CONTRACT, ptyd_contract.SNAPSHOT) as (mirror, rec, ptyd):

            async def spawn(worktree_id: str, cwd: str) -> dict[str, Any]:
                args = {"argv": ["sleep", "600"], "cwd": cwd, "worktreeId": worktree_id}
                return dict(await ptyd.call("term.spawn", args))

            kept = await spawn(known, known.split("::", 1)[1])
            moving = await spawn(renamed, renamed.split("::", 1)[1])
            user.ok("worktree", "mv", renamed, "moved")
            await mirror.wait_until(
                lambda m: rec.seen(ptyd_contract.REKEYED, lambda d: d.old == moving["sessionId"])
            )
            spawned_at = time.monotonic()
            doomed = await spawn(stray, str(stray_dir))
            doomed_proc = psutil.Process(doomed["pid"])
            await mirror.wait_until(
                lambda m: rec.seen(ptyd_contract.CLOSED, lambda d: d.session_id == doomed["sessionId"])
            )
            waited = time.monotonic() - spawned_at
            assert waited >= GC_GRACE_S, f"reaped {waited:.2f}s after spawn, before the grace"
            gone, _ = await trio.to_thread.run_sync(
                lambda: psutil.wait_procs([doomed_proc], timeout=10)
            )
            assert gone, "the reaped session's agent was ended"
            # The renamed and the known sessions lived through more than a grace of checks.
            assert alive([kept["pid"], moving["pid"]]) == [kept["pid"], moving["pid"]]
            ended = {
                e.data["sessionId"] for e in rec.events if e.type in ("term.closed", "term.exit")
            }
            assert ended == {doomed["sessionId"]}
            rows = {s["sessionId"]: s for s in (await ptyd.call("term.list", {}))["sessions"]}
            (moved_id,) = [e.data["new"] for e in rec.events if e.type == "term.rekeyed"]
            assert rows[moved_id]["running"] and rows[kept["sessionId"]]["running"]
            assert doomed["sessionId"] not in rows
        user.ok("down", "--kill-terminals")


async def test_rename_missed_by_ptyd_is_recovered_never_reaped(
    orca_home: Path, tmp_path: Path
) -> None:
    """A rename published while ptyd restarts: the next check finds the alias and re-keys (§3.1)."""
    with trio.fail_after(90):
        user, repo = setup_user(
            orca_home,
            tmp_path,
            ORCA_PTYD_GC_GRACE_S=str(GC_GRACE_S),
            ORCA_PTYD_GC_INTERVAL_S=str(GC_INTERVAL_S),
        )
        old_id = create_worktree(user, repo, "unaware")
        new_id = old_id.replace("/unaware", "/renamed")
        status = {a["name"]: a for a in user.json("status")["actors"]}
        orcad = int(json.loads(user.paths.lock_file.read_text())["pid"])
        async with (
            lifecycle(orca_home) as (life, rec),
            recorded(orca_home, ptyd_contract.CONTRACT, ptyd_contract.SNAPSHOT) as (pm, prec, ptyd),
        ):
            spawned = await ptyd.call(
                "term.spawn",
                {"argv": ["sleep", "600"], "cwd": old_id.split("::", 1)[1], "worktreeId": old_id},
            )
            os.kill(orcad, signal.SIGSTOP)
            try:
                os.kill(status["ptyd"]["pid"], signal.SIGKILL)
                moved = await trio.to_thread.run_sync(
                    lambda: user.run("worktree", "mv", old_id, "renamed")
                )
                assert moved.returncode == 0, moved.stderr
            finally:
                os.kill(orcad, signal.SIGCONT)
            await life.wait_until(
                lambda m: rec.seen(sup.STARTED, "ptyd", lambda d: d.pid != status["ptyd"]["pid"]
                )
            )

            def filed_under_new(m: object) -> bool:
                return any(
                    row.worktree_id == new_id for row in prec.snapshot.sessions
                ) or prec.seen(ptyd_contract.REKEYED, lambda d: d.old == spawned["sessionId"])

            await pm.wait_until(filed_under_new)
            # Several graces of checks later the session is still there, re-keyed.
            with trio.move_on_after(2 * GC_GRACE_S):
                await pm.wait_until(lambda m: prec.seen(ptyd_contract.CLOSED))
            sessions = (await ptyd.call("term.list", {}))["sessions"]
        assert [(s["worktreeId"], s["pid"], s["running"]) for s in sessions] == [
            (new_id, spawned["pid"], True)
        ]
        user.ok("down", "--kill-terminals")


async def test_store_down_is_no_evidence_for_a_reap(orca_home: Path, tmp_path: Path) -> None:
    """While store cannot answer, an unknown worktree's session is kept; the grace starts after (§3.1)."""
    with trio.fail_after(90):
        # A stopped store must stay stopped (not be killed by the heartbeat watchdog).
        write_config(orca_home, "[supervisor]\nheartbeat_timeout_s = 120\n")
        user, _ = setup_user(
            orca_home,
            tmp_path,
            ORCA_PTYD_GC_GRACE_S=str(GC_GRACE_S),
            ORCA_PTYD_GC_INTERVAL_S=str(GC_INTERVAL_S),
        )
        (store,) = [a for a in user.json("status")["actors"] if a["name"] == "store"]
        stray_dir = tmp_path / "stray"
        stray_dir.mkdir()
        async with recorded(orca_home, ptyd_contract.CONTRACT, ptyd_contract.SNAPSHOT) as (mirror, rec, ptyd):
            os.kill(store["pid"], signal.SIGSTOP)
            try:
                doomed = await ptyd.call(
                    "term.spawn",
                    {
                        "argv": ["sleep", "600"],
                        "cwd": str(stray_dir),
                        "worktreeId": f"{uuid.uuid4()}::{stray_dir}",
                    },
                )
                with trio.move_on_after(3 * GC_GRACE_S):
                    await mirror.wait_until(lambda m: rec.seen(ptyd_contract.CLOSED))
                assert not rec.seen(ptyd_contract.CLOSED), "reaped while the store could not answer"
            finally:
                os.kill(store["pid"], signal.SIGCONT)
            resumed = time.monotonic()
            await mirror.wait_until(
                lambda m: rec.seen(ptyd_contract.CLOSED, lambda d: d.session_id == doomed["sessionId"])
            )
            waited = time.monotonic() - resumed
            assert waited >= GC_GRACE_S, f"reaped {waited:.2f}s after the store came back"
        user.ok("down", "--kill-terminals")


# -- 2. pane retirement --------------------------------------------------------------


def two_leaf_layout(tab_id: str, first: str, second: str) -> dict[str, Any]:
    return {
        tab_id: {
            "root": {
                "type": "split",
                "direction": "vertical",
                "first": {"type": "leaf", "leafId": first},
                "second": {"type": "leaf", "leafId": second},
            }
        }
    }


async def test_retired_pane_rejects_late_status_and_stale_snapshot(
    orca_home: Path, tmp_path: Path
) -> None:
    """One store retirement: revision+flush, hooks fences, ptyd ends the PTY; nothing brings it back (§3.2)."""
    with trio.fail_after(90):
        user, repo = setup_user(orca_home, tmp_path)
        user.ok("hooks", "install", "claude")
        worktree = create_worktree(user, repo, "panes")
        cwd = worktree.split("::", 1)[1]
        tab, gone, stays = "tab-retire", str(uuid.uuid4()), str(uuid.uuid4())
        gone_key, stays_key = f"{tab}:{gone}", f"{tab}:{stays}"
        async with (
            hooks_mirror(orca_home) as (ui, hooks),
            hooks_mirror(orca_home) as (web, _),
            recorded(orca_home, hooks_contract.CONTRACT, hooks_contract.SNAPSHOT) as (_hm, hrec, _),
            recorded(orca_home, ptyd_contract.CONTRACT, ptyd_contract.SNAPSHOT) as (pm, prec, ptyd),
            open_rpc_client(user.paths.ipc_endpoint("store", "rpc")) as store,
        ):
            spawned = {}
            for key in (gone_key, stays_key):
                spawned[key] = await ptyd.call(
                    "term.spawn",
                    {
                        "argv": [str(LATE_AGENT), str(user.hook_script)],
                        "cwd": cwd,
                        "worktreeId": worktree,
                        "paneKey": key,
                    },
                )
            await ui.wait_until(lambda m: {gone_key, stays_key} <= set(m.state))
            layout = two_leaf_layout(tab, gone, stays)
            written = await store.call(
                "session.flush", {"session": {"terminalLayoutsByTabId": layout}}
            )
            stale_revision = written["revision"]

            # 1. store: bump the host's topology revision, flushed before the reply.
            retired = await store.call("session.retire_pane", {"tabId": tab, "leafId": gone})
            assert retired == {"revision": stale_revision + 1, "durable": True}
            on_disk = json.loads(user.paths.state_file.read_text())
            assert on_disk["topologyRevisionByHostId"]["local"] == stale_revision + 1
            assert gone not in json.dumps(on_disk["workspaceSession"])
            # 2. hooks follows the store: fences the pane, its row goes in one clear event.
            await ui.wait_until(lambda m: gone_key not in m.state)
            # 3. ptyd follows the store: ends the PTY; the agent's trap posts a late
            # "done" (hook + OSC) on its way out.
            await pm.wait_until(
                lambda m: prec.seen(ptyd_contract.EXIT, lambda d: d.session_id == spawned[gone_key]["sessionId"]
                )
            )
            late = await ptyd.call(
                "term.read", {"sessionId": spawned[gone_key]["sessionId"], "since": 0}
            )
            assert b"late status sent" in late["data"], "the agent did try a late status"
            osc = await hooks.call(
                "agentStatus.ingest_osc",
                {"paneKey": gone_key, "worktreeId": worktree, "payload": '{"state":"working"}'},
            )
            assert osc == {"outcome": "rejected", "reason": "retired_pane"}

            # A stale UI snapshot (the revision it read before the retirement).
            stale = await store.call(
                "session.flush",
                {"session": {"terminalLayoutsByTabId": layout}, "revision": stale_revision},
            )
            assert stale["applied"] == "metadata_only"
            session = (await store.call("session.get", {}))["session"]
            assert gone not in json.dumps(session["terminalLayoutsByTabId"])
            assert stays in json.dumps(session["terminalLayoutsByTabId"])
            saved = json.loads(user.paths.state_file.read_text())["workspaceSession"]
            assert gone not in json.dumps(saved["terminalLayoutsByTabId"])

            # Every reader lost the row at once: one clear event, no set after it.
            truth = await hooks_rows(hooks)
            await ui.wait_until(lambda m: rows_by_pane(m.state) == rows_by_pane(truth))
            await web.wait_until(lambda m: rows_by_pane(m.state) == rows_by_pane(truth))
            assert gone_key not in truth and stays_key in truth
            about_gone = [
                e.type
                for e in hrec.events
                if e.data.get("paneKey", e.data.get("row", {}).get("paneKey")) == gone_key
            ]
            assert (
                about_gone[-1:] == ["agentStatus.clear"]
                and about_gone.count("agentStatus.clear") == 1
            )
            ps = user.json("worktree", "ps")["worktrees"]
            panes = [a["paneKey"] for w in ps for a in w["agents"]]
            assert gone_key not in panes and stays_key in panes
            # The surviving pane's agent is untouched.
            assert alive([spawned[stays_key]["pid"]]) == [spawned[stays_key]["pid"]]
        user.ok("down", "--kill-terminals")


OSC_WORKING_THEN_SLEEP = r"""printf '\033]9999;{"state":"working"}\007'; exec sleep 600"""


async def test_store_pane_retirement_reaches_hooks_and_ptyd(
    orca_home: Path, tmp_path: Path
) -> None:
    """A pane retired in the store alone is fenced in hooks and its PTY ended by ptyd (§3.2 chain)."""
    with trio.fail_after(60):
        user, repo = setup_user(orca_home, tmp_path)
        worktree = create_worktree(user, repo, "chain")
        tab, leaf = "tab-chain", str(uuid.uuid4())
        key = f"{tab}:{leaf}"
        async with (
            hooks_mirror(orca_home) as (ui, _),
            recorded(orca_home, ptyd_contract.CONTRACT, ptyd_contract.SNAPSHOT) as (pm, prec, ptyd),
            open_rpc_client(user.paths.ipc_endpoint("store", "rpc")) as store,
        ):
            # The agent prints its status (OSC 9999): ptyd's one ordered line to hooks
            # carries it after the launch announcement, so the launch cannot replace it
            # (a direct ingest call could land first and be replaced).
            spawned = await ptyd.call(
                "term.spawn",
                {
                    "argv": ["sh", "-c", OSC_WORKING_THEN_SLEEP],
                    "cwd": worktree.split("::", 1)[1],
                    "worktreeId": worktree,
                    "paneKey": key,
                },
            )
            await ui.wait_until(lambda m: key in m.state)
            layout = {tab: {"root": {"type": "leaf", "leafId": leaf}}}
            await store.call("session.flush", {"session": {"terminalLayoutsByTabId": layout}})
            await store.call("session.retire_pane", {"tabId": tab, "leafId": leaf})
            with trio.move_on_after(5):
                await ui.wait_until(lambda m: key not in m.state)
                await pm.wait_until(
                    lambda m: prec.seen(ptyd_contract.EXIT, lambda d: d.session_id == spawned["sessionId"]
                    )
                )
            assert key not in ui.state, "hooks never heard of the store's retirement"
            assert prec.seen(ptyd_contract.EXIT, lambda d: d.session_id == spawned["sessionId"]), (
                "ptyd never ended the retired pane's PTY"
            )
        user.ok("down", "--kill-terminals")


async def test_term_close_fences_the_pane(orca_home: Path, tmp_path: Path) -> None:
    """`orca term close` is a pane close: later status for its pane key is rejected (§3.2)."""
    with trio.fail_after(60):
        user, repo = setup_user(orca_home, tmp_path)
        worktree = create_worktree(user, repo, "closing")
        sid = user.new_terminal(worktree, "sleep", "600")["sessionId"]
        (row,) = user.json("term", "ls")["sessions"]
        assert row["sessionId"] == sid
        user.ok("term", "close", sid)
        async with open_rpc_client(user.paths.ipc_endpoint("hooks", "rpc")) as hooks:
            late = await hooks.call(
                "agentStatus.ingest_osc",
                {
                    "paneKey": row["paneKey"],
                    "worktreeId": worktree,
                    "payload": '{"state":"working"}',
                },
            )
        assert late == {"outcome": "rejected", "reason": "retired_pane"}
        user.ok("down", "--kill-terminals")


async def test_a_shell_that_exits_on_its_own_is_unbound_from_the_session(
    orca_home: Path, tmp_path: Path
) -> None:
    """A bound shell's own `exit 3`: the store's session no longer binds its PTY, on disk
    too (kill -9 of the store right after), and the pane stays for its ended terminal (§2)."""
    with trio.fail_after(60):
        user, repo = setup_user(orca_home, tmp_path)
        worktree = create_worktree(user, repo, "exiting")
        tab, leaf = "tab-exiting", str(uuid.uuid4())
        async with (
            recorded(orca_home, store_contract.CONTRACT, store_contract.STATE_SNAPSHOT) as (
                sm,
                srec,
                store,
            ),
            open_rpc_client(user.paths.ipc_endpoint("ptyd", "rpc")) as ptyd,
        ):
            spawned = await ptyd.call(
                "term.spawn",
                {
                    "argv": ["/bin/sh", "-c", "read line; exit 3"],
                    "cwd": worktree.split("::", 1)[1],
                    "worktreeId": worktree,
                    "paneKey": f"{tab}:{leaf}",
                },
            )
            sid = spawned["sessionId"]
            bound = {"root": {"type": "leaf", "leafId": leaf}, "ptyIdsByLeafId": {leaf: sid}}
            session = {"terminalLayoutsByTabId": {tab: bound}}
            await store.call("session.flush", {"session": session})

            await ptyd.call("term.write", {"sessionId": sid, "text": "exit\n"})
            await sm.wait_until(
                lambda m: srec.seen(store_contract.SESSION_CHANGED, lambda e: e.revision == 1)
            )
            store_pid = {a["name"]: a["pid"] for a in user.json("status")["actors"]}["store"]
            os.kill(store_pid, signal.SIGKILL)  # at once: what it answered is on disk
            view = await store.call("session.get", {}, timeout=5, retries=10)
            kept = view["session"]["terminalLayoutsByTabId"][tab]
            assert kept.get("ptyIdsByLeafId", {}) == {} and view["revision"] == 1
            assert kept["root"]["leafId"] == leaf  # the ended pane stays
        shown = user.ok("term", "ls", "--all")  # no saved binding to a PTY not running
        assert f"{tab}:{leaf}" not in shown and "exited 3" in shown
        user.ok("down", "--kill-terminals")


async def test_retirement_missed_while_hooks_and_ptyd_were_down(
    orca_home: Path, tmp_path: Path
) -> None:
    """A pane retired while hooks and ptyd restart is still fenced and its PTY ended (§3.2)."""
    with trio.fail_after(90):
        user, repo = setup_user(orca_home, tmp_path)
        user.ok("hooks", "install", "claude")
        worktree = create_worktree(user, repo, "missed")
        tab, leaf = "tab-missed", str(uuid.uuid4())
        key = f"{tab}:{leaf}"
        status = {a["name"]: a for a in user.json("status")["actors"]}
        orcad = int(json.loads(user.paths.lock_file.read_text())["pid"])
        async with (
            lifecycle(orca_home) as (life, rec),
            hooks_mirror(orca_home) as (ui, hooks),
            recorded(orca_home, ptyd_contract.CONTRACT, ptyd_contract.SNAPSHOT) as (pm, prec, ptyd),
            open_rpc_client(user.paths.ipc_endpoint("store", "rpc")) as store,
        ):
            spawned = await ptyd.call(
                "term.spawn",
                {
                    "argv": [str(LATE_AGENT), str(user.hook_script)],
                    "cwd": worktree.split("::", 1)[1],
                    "worktreeId": worktree,
                    "paneKey": key,
                },
            )
            await ui.wait_until(lambda m: key in m.state)
            layout = {tab: {"root": {"type": "leaf", "leafId": leaf}}}
            await store.call("session.flush", {"session": {"terminalLayoutsByTabId": layout}})
            # Hold orcad so neither actor is back before the store's event is published.
            os.kill(orcad, signal.SIGSTOP)
            try:
                os.kill(status["hooks"]["pid"], signal.SIGKILL)
                os.kill(status["ptyd"]["pid"], signal.SIGKILL)
                retired = await store.call("session.retire_pane", {"tabId": tab, "leafId": leaf})
                assert retired["durable"]
            finally:
                os.kill(orcad, signal.SIGCONT)
            for name in ("hooks", "ptyd"):
                await life.wait_until(
                    lambda m, n=name: rec.seen(sup.STARTED, n, lambda d: d.pid != status[n]["pid"]
                    )
                )
            late = await hooks.call(
                "agentStatus.ingest_osc",
                {"paneKey": key, "worktreeId": worktree, "payload": '{"state":"working"}'},
                timeout=5,
                retries=3,
            )
            with trio.move_on_after(10):
                await pm.wait_until(
                    lambda m: prec.seen(ptyd_contract.EXIT, lambda d: d.session_id == spawned["sessionId"]
                    )
                )
            rows = await hooks_rows(hooks)
            pty_ended = alive([spawned["pid"]]) == []
        problems = [
            message
            for ok, message in (
                (key not in rows, "hooks kept the row of a pane retired while it was down"),
                (late.get("reason") == "retired_pane", f"hooks accepted a late status: {late}"),
                (pty_ended, "ptyd never ended the PTY of a pane retired while it was down"),
            )
            if not ok
        ]
        assert problems == []
        user.ok("down", "--kill-terminals")


async def test_fence_survives_a_hooks_restart(orca_home: Path, tmp_path: Path) -> None:
    """kill -9 of hooks after a retirement: the pane stays fenced (§3.2; seed 02 §9)."""
    with trio.fail_after(60):
        user, _ = setup_user(orca_home, tmp_path)
        worktree = f"{uuid.uuid4()}::{tmp_path / 'fenced'}"
        key = f"tab-fence:{uuid.uuid4()}"
        working = {"paneKey": key, "worktreeId": worktree, "payload": '{"state":"working"}'}
        async with lifecycle(orca_home) as (life, rec):
            async with open_rpc_client(user.paths.ipc_endpoint("hooks", "rpc")) as hooks:
                assert (await hooks.call("agentStatus.ingest_osc", working))["outcome"] == "applied"
                assert (await hooks.call("agentStatus.retire_pane", {"paneKey": key}))["removed"]
            (actor,) = [a for a in user.json("status")["actors"] if a["name"] == "hooks"]
            os.kill(actor["pid"], signal.SIGKILL)
            await life.wait_until(
                lambda m: rec.seen(sup.STARTED, "hooks", lambda d: d.pid != actor["pid"])
            )
        async with open_rpc_client(user.paths.ipc_endpoint("hooks", "rpc")) as hooks:
            late = await hooks.call("agentStatus.ingest_osc", working, timeout=5, retries=3)
            rows = await hooks_rows(hooks)
        assert key not in rows, "the retired pane's row came back after a hooks restart"
        assert late == {"outcome": "rejected", "reason": "retired_pane"}
        user.ok("down", "--kill-terminals")


# -- 3. status fan-out ---------------------------------------------------------------

PANES = 40
ROUNDS = 25
STATES = ("working", "blocked", "waiting", "done")


class DroppingMirror(Mirror[dict[str, AgentStatusRow]]):
    """A reader on a lossy link: every ``drop_every``-th message never arrives."""

    def __init__(self, drop_every: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.drop_every = drop_every
        self.received = 0
        self.dropped = 0

    def _on_message(self, frames: list[bytes]) -> None:
        self.received += 1
        if self.received % self.drop_every == 0:
            self.dropped += 1
            return
        super()._on_message(frames)


async def test_three_subscribers_hold_identical_rows_after_event_loss(
    orca_home: Path, tmp_path: Path
) -> None:
    """CLI, a lossy mirror and a late joiner end with the rows hooks holds (§3.3)."""
    with trio.fail_after(90):
        user, _ = setup_user(orca_home, tmp_path)
        worktree = f"{uuid.uuid4()}::{tmp_path / 'fan'}"
        keys = [f"tab-fan{i}:{uuid.uuid4()}" for i in range(PANES)]
        async with (
            hooks_mirror(orca_home) as (steady, hooks),
            open_rpc_client(user.paths.ipc_endpoint("hooks", "rpc")) as client,
            trio.open_nursery() as nursery,
        ):
            lossy = DroppingMirror(
                7,
                client=client,
                pub_endpoint=user.paths.ipc_endpoint("hooks", "pub"),
                snapshot=hooks_contract.SNAPSHOT,
                events=hooks_contract.EVENTS,
                load=hooks_contract.load_mirror,
                apply=hooks_contract.apply_to_mirror,
                rcvhwm=1,
            )
            await nursery.start(lossy.run)
            for r in range(ROUNDS):
                for i, key in enumerate(keys):
                    state = STATES[(r + i) % len(STATES)]
                    await hooks.call(
                        "agentStatus.ingest_osc",
                        {
                            "paneKey": key,
                            "worktreeId": worktree,
                            "payload": json.dumps({"state": state}),
                        },
                    )
            await hooks.call("agentStatus.clear", {"paneKey": keys[0]})
            truth = rows_by_pane(await hooks_rows(hooks))
            assert len(truth) == PANES - 1
            await steady.wait_until(lambda m: rows_by_pane(m.state) == truth)
            await lossy.wait_until(lambda m: rows_by_pane(m.state) == truth)
            async with hooks_mirror(orca_home) as (late, _):
                await late.wait_until(lambda m: rows_by_pane(m.state) == truth)
            cli = {
                a["paneKey"]: (w["worktreeId"], a["state"], a["restoredUnconfirmed"])
                for w in user.json("worktree", "ps")["worktrees"]
                for a in w["agents"]
            }
            assert cli == truth
            assert lossy.dropped > 0 and lossy.snapshots > 1, "events were lost, then resynced"
            nursery.cancel_scope.cancel()
            lossy.close()
        user.ok("down", "--kill-terminals")
