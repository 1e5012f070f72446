"""A new user's first session with Orca, end to end, through the CLI only.

Real orcad and actors, a real git repository, the hook script ``orca hooks install``
installs (the one real agents call) and a fake agent that also speaks OSC 9999.
"""

from __future__ import annotations

import json
from pathlib import Path

import trio
from support.journey import (
    FAKE_AGENT,
    User,
    hooks_mirror,
    make_git_repo,
    recorded,
    wait_for_output,
)
from support.lifecycle import lifecycle
from support.procs import alive, descendants

from orca.actor import open_rpc_client
from orca.client.sync import invoke
from orca.contracts import ptyd as ptyd_contract
from orca.contracts import supervisor as sup

# Longer than trio's worker-thread idle timeout (10 s): an idle tree must outlive the
# thread orcad happened to spawn its children from.
IDLE_S = 14.0


def orcad_pid(user: User) -> int:
    return int(json.loads(user.paths.lock_file.read_text())["pid"])


def states(rows: dict, worktree_id: str) -> list[str]:  # type: ignore[type-arg]
    return [r.state for r in rows.values() if r.worktree_id == worktree_id]


def ps_states(user: User) -> dict[str, list[tuple[str, bool]]]:
    """``orca worktree ps --json`` as {worktreeId: [(state, restoredUnconfirmed)]}."""
    return {
        w["worktreeId"]: [(a["state"], a["restoredUnconfirmed"]) for a in w["agents"]]
        for w in user.json("worktree", "ps")["worktrees"]
    }


async def test_idle_tree_keeps_every_actor_up(orca_home: Path, tmp_path: Path) -> None:
    """`orca up` then nothing: no actor exits or restarts (seed 02: the service stays up)."""
    with trio.fail_after(60):
        user = User(orca_home, tmp_path / "user")
        user.ok("up")
        async with lifecycle(orca_home) as (mirror, rec):
            with trio.move_on_after(IDLE_S):
                await mirror.wait_until(
                    lambda m: any(e.type.endswith(".exited") for e in rec.events)
                )
            exits = [e.data for e in rec.events if e.type.endswith(".exited")]
        assert exits == [], f"actors exited while the tree was idle: {exits}"
        status = {a["name"]: a for a in user.json("status")["actors"]}
        assert {n: a["restarts"] for n, a in status.items()} == {n: 0 for n in status}
        user.ok("down", "--kill-terminals")


async def test_first_session_two_agents_rename_and_restart(orca_home: Path, tmp_path: Path) -> None:
    """up, repo add, two worktrees with agents, working→done, rename live, down, up restores."""
    with trio.fail_after(150):
        user = User(orca_home, tmp_path / "user")
        project = make_git_repo(tmp_path / "project")
        assert "every actor ready" in user.ok("up")
        user.ok("repo", "add", str(project))
        (repo,) = user.json("repo", "ls")["repos"]
        assert repo["path"] == str(project)
        assert "installed into" in user.ok("hooks", "install", "claude")
        settings = (user.user_home / ".claude" / "settings.json").read_text()
        assert str(user.hook_script) in settings and user.hook_script.exists()

        wt = {
            name: user.json("worktree", "create", repo["id"], name, "--setup", "skip")["worktree"]
            for name in ("alpha", "beta")
        }
        ids = {name: w["worktreeId"] for name, w in wt.items()}
        async with (
            hooks_mirror(orca_home) as (rows, _),
            recorded(orca_home, ptyd_contract.CONTRACT, ptyd_contract.SNAPSHOT) as (ptyd_mirror, ptyd_rec, ptyd),
        ):
            sessions = {
                name: user.new_terminal(ids[name], str(FAKE_AGENT), str(user.hook_script))[
                    "sessionId"
                ]
                for name in ("alpha", "beta")
            }
            await rows.wait_until(
                lambda m: all(states(m.state, ids[n]) == ["working"] for n in ids)
            )
            ps = ps_states(user)
            assert ps[ids["alpha"]] == [("working", False)]
            assert ps[ids["beta"]] == [("working", False)]
            (row_a,) = [r for r in rows.state.values() if r.worktree_id == ids["alpha"]]
            assert row_a.source == "hook", "the hook outranks the OSC document (seed 03)"

            user.ok("term", "send", "--enter", sessions["alpha"], "go")
            await rows.wait_until(lambda m: states(m.state, ids["alpha"]) == ["done"])
            ps = ps_states(user)
            assert ps[ids["alpha"]] == [("done", False)]
            assert ps[ids["beta"]] == [("working", False)]

            # Rename alpha's folder while its agent is alive: the session is re-keyed.
            (before,) = [
                s
                for s in user.json("term", "ls")["sessions"]
                if s["sessionId"] == sessions["alpha"]
            ]
            user.ok("worktree", "mv", ids["alpha"], "alpha-renamed")
            new_alpha = ids["alpha"].replace("/alpha", "/alpha-renamed")
            await ptyd_mirror.wait_until(
                lambda m: ptyd_rec.seen(ptyd_contract.REKEYED, lambda d: d.old == sessions["alpha"])
            )
            (moved,) = [e.data["new"] for e in ptyd_rec.events if e.type == ptyd_contract.REKEYED.type]
            (after,) = [s for s in user.json("term", "ls")["sessions"] if s["sessionId"] == moved]
            assert after["worktreeId"] == new_alpha
            assert after["pid"] == before["pid"] and after["running"]
            user.ok("term", "send", "--enter", moved, "still-here")
            await wait_for_output(ptyd, ptyd_mirror, ptyd_rec, moved, b"agent: echo still-here")
            assert "still-here" in user.ok("term", "read", sessions["alpha"]), "old id is an alias"

            # A UI saves its layout: one tab per agent, each a single-leaf pane.
            terms = user.json("term", "ls")["sessions"]
            layout = {
                t["tabId"]: {"root": {"type": "leaf", "leafId": t["paneKey"].split(":", 1)[1]}}
                for t in terms
            }
            async with open_rpc_client(user.paths.ipc_endpoint("store", "rpc")) as store:
                flushed = await store.call(
                    "session.flush", {"session": {"terminalLayoutsByTabId": layout}}
                )
                assert flushed["flushed"]

        tree = orcad_pid(user)
        everything = [tree, *descendants(tree)]
        agents = {t["pid"] for t in terms}
        keeper = invoke(sup.STATUS, paths=user.paths).supervisor.keeper_pid
        # Terminals are running, so a plain `down` refuses; the user keeps them.
        refused = user.run("down")
        assert refused.returncode == 2 and "--keep-terminals" in refused.stderr
        user.ok("down", "--keep-terminals")
        left = set(alive([*everything, keeper] if keeper else everything))
        assert agents <= left and left - agents <= {keeper}, "only the keeper and agents stay"

        assert "every actor ready" in user.ok("up")
        listed = {t["sessionId"]: t for t in user.json("term", "ls")["sessions"]}
        assert {t["pid"] for t in listed.values() if t["running"]} == agents, "re-adopted"
        (restored,) = user.json("repo", "ls")["repos"]
        assert restored == repo
        # Issue 23: beta's agent was re-adopted (same pid), so ptyd's truth ties the row
        # it wrote before the restart to its live terminal again; issue 33: but a live
        # PTY proves the process, not its turn - the row stays restored until beta's
        # agent reports again (seed 03 R15).
        beta_terminal = next(t["terminalHandle"] for t in terms if t["worktreeId"] == ids["beta"])
        async with hooks_mirror(orca_home) as (rows, _):
            await rows.wait_until(
                lambda m: [r.terminal_handle for r in m.state.values()
                           if r.worktree_id == ids["beta"]] == [beta_terminal]
            )
        ps = ps_states(user)
        assert ps[ids["beta"]] == [("working", True)], "a re-adopted agent's row stays restored"
        assert [s for wt_rows in ps.values() for s in wt_rows if s[0] == "done"] == [
            ("done", False)
        ], "a finished turn is restored as it was"
        async with open_rpc_client(user.paths.ipc_endpoint("store", "rpc")) as store:
            session = (await store.call("session.get", {}))["session"]
        assert session["terminalLayoutsByTabId"] == layout
        user.ok("down", "--kill-terminals")


async def test_agent_status_follows_a_renamed_worktree(orca_home: Path, tmp_path: Path) -> None:
    """After `orca worktree mv`, `orca worktree ps` shows the live agent under the new id."""
    with trio.fail_after(90):
        user = User(orca_home, tmp_path / "user")
        project = make_git_repo(tmp_path / "project")
        user.ok("up")
        user.ok("repo", "add", str(project))
        (repo,) = user.json("repo", "ls")["repos"]
        user.ok("hooks", "install", "claude")
        created = user.json("worktree", "create", repo["id"], "before", "--setup", "skip")
        old_id = created["worktree"]["worktreeId"]
        async with (
            hooks_mirror(orca_home) as (rows, _),
            recorded(orca_home, ptyd_contract.CONTRACT, ptyd_contract.SNAPSHOT) as (ptyd_mirror, ptyd_rec, _),
        ):
            sid = user.new_terminal(old_id, str(FAKE_AGENT), str(user.hook_script))["sessionId"]
            await rows.wait_until(lambda m: states(m.state, old_id) == ["working"])
            user.ok("worktree", "mv", old_id, "after")
            new_id = old_id.replace("/before", "/after")
            await ptyd_mirror.wait_until(
                lambda m: ptyd_rec.seen(ptyd_contract.REKEYED, lambda d: d.old == sid.strip())
            )
            user.ok("term", "send", "--enter", sid.strip(), "go")
            await rows.wait_until(lambda m: "done" in [r.state for r in m.state.values()])
        ps = ps_states(user)
        assert old_id not in ps, f"status still filed under the old id: {ps}"
        assert ps.get(new_id) == [("done", False)]
        user.ok("down", "--kill-terminals")
