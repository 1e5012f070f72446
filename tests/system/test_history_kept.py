"""Output history is never lost (issue 13): `down`, a simulated reboot, an agent's exit;
the ended-history budget; saved PTY bindings reconciled after a restart.

Real processes throughout: ``orca up`` starts orcad (store + ptyd) and the keeper, the
CLI is run as a user runs it, agents are real shells on real PTYs.
"""

from __future__ import annotations

import shutil
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
from support.journey import User, recorded
from support.lifecycle import lifecycle
from support.procs import kill_like_a_reboot, write_config

from orca.actor import Mirror, open_rpc_client
from orca.actor.client import RpcClient
from orca.contracts import ptyd, store
from orca.contracts import supervisor as sup

TREE = """
[supervisor]
backoff_initial_s = 0.05
heartbeat_interval_s = 0.5
[[child]]
name = "store"
module = "actors.store"
[[child]]
name = "hooks"
module = "actors.hooks"
[[child]]
name = "ptyd"
module = "actors.ptyd"
"""
WT = "repo1::/w/hist"
LEAF_LIVE = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
LEAF_EXITED = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
LEAF_GHOST = "16fd2706-8baf-433b-82eb-8c7fada847da"
GHOST = f"{WT}@@0badf00d"


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    write_config(orca_home, TREE)
    person = User(orca_home, tmp_path / "user")
    person.ok("up")
    try:
        yield person
    finally:
        kill_like_a_reboot(person.paths)


@asynccontextmanager
async def ptyd_events(user: User) -> AsyncIterator[tuple[Mirror[Any], Any, RpcClient]]:
    async with recorded(user.orca_home, ptyd.CONTRACT, ptyd.SNAPSHOT) as triple:
        yield triple


async def spawn(client: RpcClient, script: str) -> ptyd.SpawnResult:
    args = ptyd.SpawnArgs(argv=["/bin/sh", "-c", script], cwd="/", worktree_id=WT)
    result: ptyd.SpawnResult = await client.invoke(ptyd.SPAWN, args)
    return result


async def output_of(
    client: RpcClient, mirror: Mirror[Any], rec: Any, sid: str, needle: bytes
) -> None:
    """Wait (on ptyd's events, no polling) until ``needle`` is in the session's output."""
    while True:
        seen = len(rec.events)
        reply = await client.invoke(ptyd.READ, ptyd.ReadArgs(session_id=sid))
        if needle in reply.data:
            return
        await mirror.wait_until(lambda m, n=seen: len(rec.events) > n)


def exited(rec: Any, sid: str) -> Callable[[Any], bool]:
    return lambda m: rec.seen(ptyd.EXIT, lambda e: e.session_id == sid)


async def start_two_agents(user: User) -> tuple[str, str]:
    """A live agent (output, then waits) and one that printed and exited with code 3."""
    async with ptyd_events(user) as (mirror, rec, client):
        live = await spawn(client, "printf 'LIVE-%s\\n' OUTPUT; exec sleep 600")
        done = await spawn(client, "printf 'DONE-%s\\n' OUTPUT; exit 3")
        await output_of(client, mirror, rec, live.session_id, b"LIVE-OUTPUT")
        await mirror.wait_until(exited(rec, done.session_id))
    return live.session_id, done.session_id


def listed(user: User, *flags: str) -> dict[str, dict[str, Any]]:
    return {s["sessionId"]: s for s in user.json("term", "ls", *flags)["sessions"]}


def assert_readable(user: User, sid: str, needle: str, code: int) -> None:
    """`term read` prints the output; `term attach` the final screen and the exit code."""
    assert needle in user.ok("term", "read", sid)
    attached = user.run("term", "attach", sid)  # returns at once: the session has ended
    assert attached.returncode == 0, attached.stderr
    assert needle in attached.stdout
    if code == -1:
        assert "exit code unknown" in attached.stdout
    else:
        assert f"exited with code {code}" in attached.stdout


async def test_history_kept_across_exit_and_down_kill_terminals(user: User) -> None:
    """An agent that exits stays readable and listed under --all (plain ls hides it and
    says so); after `down --kill-terminals` and `up` both sessions are listed, ended,
    with their output and exit codes."""
    with trio.fail_after(90):
        live, done = await start_two_agents(user)
        table = user.ok("term", "ls")
        assert "running" in table and "exited 3" not in table
        assert "1 ended terminal hidden" in table and "--all" in table
        assert "exited 3" in user.ok("term", "ls", "--all")
        assert_readable(user, done, "DONE-OUTPUT", 3)

        pid = listed(user)[live]["pid"]
        down = user.run("down", "--kill-terminals")
        assert down.returncode == 0, down.stderr
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        user.ok("up")

        rows = listed(user, "--all")
        assert set(rows) >= {live, done}
        assert rows[done]["archived"] and rows[done]["exitCode"] == 3 and not rows[done]["lost"]
        assert rows[live]["archived"] and not rows[live]["running"] and not rows[live]["lost"]
        assert rows[live]["exitCode"] not in (None, -1)  # it ended by the kill: code seen
        assert listed(user) == {}  # --json without --all: this ptyd's own table only
        assert "2 ended terminals hidden" in user.ok("term", "ls")
        assert_readable(user, done, "DONE-OUTPUT", 3)
        assert_readable(user, live, "LIVE-OUTPUT", rows[live]["exitCode"])
        # An ended session is named by its handle too, as `term ls --all` shows it.
        assert "DONE-OUTPUT" in user.ok("term", "read", rows[done]["handle"])
        closed = user.run("term", "close", done)  # the user deletes an ended terminal's history
        assert closed.returncode == 0 and "deleted" in closed.stderr, closed
        assert done not in listed(user, "--all") and live in listed(user, "--all")


# Ended by Orca's kill (SIGHUP + SIGTERM, SIGKILL after the grace), each by another
# signal: (script, what it prints once up, the code a shell reports for it: 128 + N).
BY_HUP, BY_TERM, BY_KILL = (128 + s for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGKILL))
ENDED_BY = [
    ("printf 'PLAIN-%s\\n' UP; exec sleep 600", b"PLAIN-UP", BY_HUP),
    ("trap '' HUP; printf 'NOHUP-%s\\n' UP; while :; do sleep 1; done", b"NOHUP-UP", BY_TERM),
    ("trap '' HUP TERM; printf 'STUB-%s\\n' UP; while :; do sleep 1; done", b"STUB-UP", BY_KILL),
]


async def test_orca_ended_terminals_keep_their_exit_code_after_a_readoption(user: User) -> None:
    """Issue 23: agents re-adopted across ``down --keep-terminals`` + ``up`` are no longer
    ptyd's children (init reaps them, no wait status reaches Orca); once ``down
    --kill-terminals`` ended them and ``up`` came back, ``term ls --all`` shows the
    signal Orca ended each with (128 + N), not ``exited -1``."""
    with trio.fail_after(120):
        async with ptyd_events(user) as (mirror, rec, client):
            sids = {}
            for script, needle, code in ENDED_BY:
                sid = (await spawn(client, script)).session_id
                await output_of(client, mirror, rec, sid, needle)
                sids[sid] = code
        pids = [listed(user)[sid]["pid"] for sid in sids]
        user.ok("down", "--keep-terminals")
        user.ok("up")  # re-adopted: their parent is init now, not this ptyd
        assert {sid: row["running"] for sid, row in listed(user).items()} == dict.fromkeys(
            sids, True
        )
        down = user.run("down", "--kill-terminals")
        assert down.returncode == 0, down.stderr
        assert not any(psutil.pid_exists(pid) for pid in pids)
        user.ok("up")
        rows = listed(user, "--all")
        assert {sid: (rows[sid]["exitCode"], rows[sid]["lost"]) for sid in sids} == {
            sid: (code, False) for sid, code in sids.items()
        }
        table = user.ok("term", "ls", "--all")
        assert all(f"exited {code}" in table for *_, code in ENDED_BY), table


async def session_when(user: User, holds: Callable[[Any], bool]) -> store.SessionView:
    """The local session once ``holds(session)`` (read again after each store
    ``session.changed``, no polling)."""
    paths = user.paths
    async with (
        open_rpc_client(paths.ipc_endpoint("store", "rpc")) as client,
        trio.open_nursery() as nursery,
    ):
        seen: list[Any] = []
        mirror: Mirror[Any] = Mirror(
            client=client,
            pub_endpoint=paths.ipc_endpoint("store", "pub"),
            snapshot=store.STATE_SNAPSHOT,
            events=[store.SESSION_CHANGED],
            load=lambda snap: snap,
            apply=lambda state, _e, typed: seen.append(typed) or state,
            consumer="tests<-store",
        )
        await nursery.start(mirror.run)
        while True:
            count = len(seen)
            view: store.SessionView = await client.invoke(
                store.SESSION_GET, store.SessionGetArgs(), timeout=5, retries=5
            )
            if holds(view.session):
                nursery.cancel_scope.cancel()
                mirror.close()
                return view
            await mirror.wait_until(lambda m, n=count: len(seen) > n)


async def session_reconciled(user: User) -> store.SessionView:
    """The local session once ptyd's reconciliation reached it (waits on store events)."""
    return await session_when(user, lambda s: s.pty_reconciliation is not None)


def bind_panes(user: User, by_leaf: dict[str, str]) -> None:
    tabs = [
        {"id": "t1", "entityId": "t1", "groupId": "g", "worktreeId": WT, "contentType": "terminal"}
    ]
    session = {
        "terminalLayoutsByTabId": {
            "t1": {
                "root": {
                    "type": "split",
                    "direction": "vertical",
                    "first": {"type": "leaf", "leafId": LEAF_LIVE},
                    "second": {
                        "type": "split",
                        "direction": "vertical",
                        "first": {"type": "leaf", "leafId": LEAF_EXITED},
                        "second": {"type": "leaf", "leafId": LEAF_GHOST},
                    },
                },
                "ptyIdsByLeafId": by_leaf,
            }
        },
        "unifiedTabs": {WT: tabs},
        "tabGroups": {WT: [{"id": "g", "worktreeId": WT, "tabOrder": ["t1"], "activeTabId": "t1"}]},
        "activeWorktreeIdsOnShutdown": [WT],
    }
    from orca.client.sync import invoke

    invoke(store.SESSION_FLUSH, store.SessionFlushArgs(session=session), paths=user.paths)


async def test_simulated_reboot_keeps_history_and_marks_gone_bindings(user: User) -> None:
    """kill -9 of every Orca process and every agent, the runtime dir wiped (a reboot):
    after `up` each session's last output is readable (the live one as *lost*), and the
    saved bindings to its PTYs are marked (exited / gone), never trusted."""
    with trio.fail_after(90):
        async with ptyd_events(user) as (mirror, rec, client):
            live = (await spawn(client, "printf 'LIVE-%s\\n' OUTPUT; exec sleep 600")).session_id
            done = (await spawn(client, "read x; printf 'DONE-%s\\n' OUTPUT; exit 3")).session_id
            await output_of(client, mirror, rec, live, b"LIVE-OUTPUT")
            bind_panes(user, {LEAF_LIVE: live, LEAF_EXITED: done, LEAF_GHOST: GHOST})
            await client.invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=done, text="go\n"))
            await mirror.wait_until(exited(rec, done))
        # Seed 02-25: the PTY that exited by itself loses its binding (ptyd retires it).
        unbound = lambda s: LEAF_EXITED not in s.terminal_layouts_by_tab_id["t1"].pty_ids_by_leaf_id  # noqa: E731
        await session_when(user, unbound)
        # A writer that binds it again afterwards (a stale UI) cannot bind it again.
        bind_panes(user, {LEAF_LIVE: live, LEAF_EXITED: done, LEAF_GHOST: GHOST})

        kill_like_a_reboot(user.paths)  # orcad, store, ptyd, the keeper, both agents
        shutil.rmtree(user.paths.runtime_dir)
        user.ok("up")

        rows = listed(user, "--all")
        assert rows[live]["archived"] and rows[live]["lost"] and rows[live]["exitCode"] == -1
        assert rows[done]["archived"] and rows[done]["exitCode"] == 3
        assert "lost" in user.ok("term", "ls", "--all")
        assert_readable(user, live, "LIVE-OUTPUT", -1)
        assert_readable(user, done, "DONE-OUTPUT", 3)

        view = await session_reconciled(user)
        verdicts = view.session.pty_reconciliation
        assert verdicts is not None
        ended = {k: (v.state, v.exit_code) for k, v in verdicts.ended.items()}
        assert ended == {live: ("exited", -1), GHOST: ("gone", None)}
        assert verdicts.shutdown_worktrees_without_pty == (WT,)
        # The bindings themselves are the UI's and stay; readers show the verdict.
        layout = view.session.terminal_layouts_by_tab_id["t1"]
        assert layout.pty_ids_by_leaf_id[LEAF_GHOST] == GHOST
        assert LEAF_EXITED not in layout.pty_ids_by_leaf_id  # retired when it exited
        shown = user.ok("term", "ls", "--all")
        assert f"t1:{LEAF_GHOST}" in shown and "gone" in shown
        assert f"t1:{LEAF_EXITED}" not in shown and "exited 3" in shown  # the session's row
        assert f"worktree {WT}" in shown and "had a terminal at shutdown" in shown
        ps = user.ok("worktree", "ps")
        assert "2 saved pane bindings to terminals not running (exited, gone)" in ps
        assert "1 worktree had a terminal at shutdown and now none" in ps


async def restart_ptyd(user: User) -> None:
    """`orca restart ptyd`, then wait (on orcad's events) for the new one to be ready."""
    async with lifecycle(user.orca_home) as (mirror, rec):
        before = {a["name"]: a["pid"] for a in user.json("status")["actors"]}["ptyd"]
        user.ok("restart", "ptyd")
        await mirror.wait_until(lambda m: rec.seen(sup.STARTED, "ptyd", lambda d: d.pid != before))


async def test_budget_evicts_ended_history_but_never_a_live_sessions(
    user: User, orca_home: Path
) -> None:
    """With a zero budget an ended session's history is evicted as soon as it ends
    (term.closed, `term read` not found); a live session's is kept whatever the budget,
    also across a restart of ptyd."""
    (orca_home / "config" / "ptyd.toml").write_text("[history]\nmax_bytes = 0\n")
    with trio.fail_after(90):
        await restart_ptyd(user)
        async with ptyd_events(user) as (mirror, rec, client):
            live = await spawn(client, "printf 'KEEP-%s\\n' ME; exec sleep 600")
            done = await spawn(client, "printf 'GONE-%s\\n' SOON; exit 0")
            await output_of(client, mirror, rec, live.session_id, b"KEEP-ME")
            await mirror.wait_until(
                lambda m: rec.seen(ptyd.CLOSED, lambda e: e.session_id == done.session_id)
            )
        assert done.session_id not in listed(user, "--all")
        missing = user.run("term", "read", done.session_id)
        assert missing.returncode != 0 and "no terminal session" in missing.stderr
        await restart_ptyd(user)  # re-adopts the live one from the keeper; budget applied
        assert "KEEP-ME" in user.ok("term", "read", live.session_id)
        assert listed(user)[live.session_id]["running"]
