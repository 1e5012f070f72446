"""One truth across the CLI (issue 23), as a user types it against a real tree.

What one command prints, the next takes: ``orca term new`` prints a handle that ``orca
ack``, ``orca term`` and ``orca watch`` agree on; every ``--json`` listing carries each
row's handle; ended terminals never make a worktree's name ambiguous; ``orca restart``
returns once the actor answers; a broken agent config spoils only its own row.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.journey import User, make_git_repo
from support.lines import Lines
from support.procs import write_config

from orca.client.sync import Subscription, subscribe
from orca.contracts import ptyd

# An agent that reports a finished turn (OSC 9999) and waits: a done, unread row.
DONE_AGENT = (
    "/bin/sh",
    "-c",
    'printf "\\033]9999;{\\"state\\":\\"done\\",\\"agent\\":\\"claude\\"}\\007"; exec sleep 600',
)
EXIT_WAIT_S = 30.0


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    """A running tree with repo `project` and its worktree `fix-login`."""
    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        user.ok("repo", "add", str(make_git_repo(tmp_path / "project")))
        user.ok("worktree", "create", "project", "fix-login", "--setup", "skip")
        yield user
    finally:
        user.run("down", "--kill-terminals")


@contextmanager
def watching(user: User) -> Iterator[Lines]:
    """`orca watch --json` running; its lines as they come."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "orca.cli.main", "watch", "--json"],
        env=user.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield Lines(proc)
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


@contextmanager
def exits(user: User) -> Iterator[Subscription]:
    """ptyd's `term.exit` events, subscribed (and proven live) before anything exits."""
    sub = subscribe(ptyd.CONTRACT.actor, [ptyd.EXIT], consumer="tests", paths=user.paths)
    try:
        assert sub.wait_live(10.0)
        yield sub
    finally:
        sub.close()


def exit_code_of(sub: Subscription, session_id: str) -> int | None:
    """The exit code of ``session_id``, waiting for its `term.exit` event."""
    for _, exited in sub.until(time.monotonic() + EXIT_WAIT_S):
        if exited.session_id == session_id:
            return exited.exit_code  # type: ignore[no-any-return]
    raise AssertionError(f"{session_id} did not exit")


def wait_done_unread(lines: Lines, *handles: str) -> None:
    """Until every one of ``handles`` has had a done, unread line (in any order)."""
    left = set(handles)
    while left:
        line = lines.wait_for(
            lambda d: d["event"] == "set" and d["handle"] in left and d["unread"],
            f"{', '.join(sorted(left))} done and unread",
        )
        left.discard(line["handle"])


def test_ack_takes_what_term_new_printed_a_worktree_or_a_pane_key(user: User) -> None:
    """The README's `orca ack fix-login:3f2a`: the handle `term new` printed acks that
    agent (watch names it by the same handle); a worktree acks every agent in it."""
    with watching(user) as lines:
        first = user.ok("term", "new", "fix-login", "--", *DONE_AGENT).strip()
        second = user.new_terminal("fix-login", *DONE_AGENT)
        handles = {s["sessionId"]: s["handle"] for s in user.json("term", "ls")["sessions"]}
        assert first in handles.values() and handles[second["sessionId"]] == second["handle"]
        assert not first.count("@@"), "term new prints the handle, not the 100-character id"
        wait_done_unread(lines, first, second["handle"])

        assert user.ok("ack", first).strip() == "acknowledged 1 agent"
        read = lines.wait_for(lambda d: d["handle"] == first and not d["unread"], "acked")
        assert read["paneKey"] != first and read["worktreeId"] != "fix-login"  # ids kept
        assert user.ok("ack", "fix-login").strip() == "acknowledged 1 agent"  # the other one
        lines.wait_for(lambda d: d["handle"] == second["handle"] and not d["unread"], "acked")
    assert json.loads(user.ok("ack", "fix-login", "--json")) == {"acked": 0}
    assert json.loads(user.ok("ack", second["paneKey"], "--json")) == {"acked": 0}
    unknown = user.run("ack", "nope")
    assert unknown.returncode == 2 and "no worktree or terminal matches 'nope'" in unknown.stderr


def test_every_listing_names_rows_by_handle_and_status_shows_orcad_and_keeper(
    user: User, tmp_path: Path
) -> None:
    """`--json` of every listing carries `handle`; down's refusal and completion use the
    handles the listings show."""
    notes = tmp_path / "notes"
    notes.mkdir()
    folder_id = user.add_folder(notes, "my notes", "research")
    with watching(user) as lines:
        handle = user.new_terminal("fix-login", *DONE_AGENT)["handle"]
        wait_done_unread(lines, handle)

    status = json.loads(user.ok("status", "--json"))
    assert [a["handle"] for a in status["actors"]] == [a["name"] for a in status["actors"]]
    assert status["orcad"]["handle"] == "orcad" and status["orcad"]["pid"] > 0
    assert status["keeper"]["handle"] == "keeper" and status["keeper"]["pid"] > 0
    # orcad hands the keeper its build: the keeper hashes nothing, so it never loads
    # OpenSSL (4 MiB of its 22, issue 36), and still reports the build it runs.
    assert status["keeper"]["build"] == status["orcad"]["build"] != ""
    with open(f"/proc/{status['keeper']['pid']}/maps", encoding="utf-8") as maps:
        assert "libcrypto" not in maps.read()
    (worktree,) = user.json("worktree", "ps")["worktrees"]
    assert worktree["handle"] == "fix-login" and worktree["agents"][0]["handle"] == handle
    worktrees = {w["id"]: w["handle"] for w in user.json("worktree", "ls", "--all")["worktrees"]}
    (folder,) = user.json("folder", "ls")["folders"]
    assert folder["handle"] == worktrees[folder_id] == "notes"
    assert user.ok("folder", "ls").splitlines()[1].split()[:3] == ["notes", "my", "notes"]
    for listing, key in (
        (("repo", "ls"), "repos"),
        (("worktree", "ls"), "worktrees"),
        (("term", "ls"), "sessions"),
        (("hooks", "status"), "integrations"),
        (("host", "ls"), "hosts"),
    ):
        rows = user.json(*listing)[key]
        assert all(isinstance(r["handle"], str) and r["handle"] for r in rows), listing

    refused = user.run("down")
    assert refused.returncode == 2, refused
    assert f"  {handle}  pid " in refused.stderr and "@@" not in refused.stderr
    ack = user.ok("__complete", "--", "ack", "").split()
    assert handle in ack and "fix-login" in ack
    assert user.ok("__complete", "--", "term", "kill", "").split() == [handle]


def test_an_agent_reporting_only_by_http_hook_carries_its_terminal_everywhere(
    user: User,
) -> None:
    """Issue 32: `terminalHandle` was null in `worktree ps --json` and `watch --json`
    for an agent whose reports came only through its hook (HTTP: no terminal named),
    although `term new` printed it; every listing carries `term new`'s handle and
    terminal handle."""
    report = (
        'printf \'{"hook_event_name":"UserPromptSubmit","session_id":"s-1"}\''
        f" | {user.hook_script} claude >/dev/null; exec sleep 600"
    )
    with watching(user) as lines:
        made = user.new_terminal("fix-login", "/bin/sh", "-c", report)
        # (The hook can beat ptyd's word of the launch: its first line may name no
        # terminal yet; the launch's word completes the row.)
        line = lines.wait_for(
            lambda d: d["event"] == "set" and d["terminalHandle"] is not None, "the row named"
        )
    assert (line["handle"], line["terminalHandle"]) == (made["handle"], made["terminalHandle"])
    assert line["state"] == "working"
    (worktree,) = user.json("worktree", "ps")["worktrees"]
    (agent,) = worktree["agents"]
    assert (agent["handle"], agent["terminalHandle"]) == (made["handle"], made["terminalHandle"])


def spawned(user: User, script: str, *more: str) -> dict[str, Any]:
    """`orca term new fix-login -- /bin/sh -c SCRIPT MORE...` as typed: its `term ls` row."""
    user.ok("term", "new", "fix-login", "--", "/bin/sh", "-c", script, *more)
    (row,) = [s for s in user.json("term", "ls", "--all")["sessions"] if s["argv"][2] == script]
    return row


def test_ended_terminals_leave_a_worktree_name_to_its_running_one(user: User) -> None:
    """A worktree with one live terminal and ended ones (history kept): `term send` and
    `term kill` by the worktree's name reach the live one; the ended ones stay named by
    their handles; a `--` inside the command is the command's."""
    with exits(user) as sub:
        ended = spawned(user, 'echo bye "$@"; exit 3', "sh", "--", "kept")
        assert ended["argv"][-2:] == ["--", "kept"]
        assert exit_code_of(sub, ended["sessionId"]) == 3
        reader = spawned(user, "read line; exit 7")
        sent = user.run("term", "send", "fix-login", "go", "--enter")
        assert sent.returncode == 0, sent.stderr
        assert exit_code_of(sub, reader["sessionId"]) == 7
        sleeper = spawned(user, "exec sleep 600")
        killed = user.run("term", "kill", "fix-login")
        assert killed.returncode == 0, killed.stderr
        assert exit_code_of(sub, sleeper["sessionId"]) is not None
    assert "bye -- kept" in user.ok("term", "read", ended["handle"])
    nothing_runs = user.run("term", "read", "fix-login")
    assert nothing_runs.returncode == 2
    assert all(s["handle"] in nothing_runs.stderr for s in (ended, reader, sleeper))


RESTART_TREE = """
[supervisor]
backoff_initial_s = 0.05
heartbeat_interval_s = 0.5
[[child]]
name = "ptyd"
module = "actors.ptyd"
"""


def test_restart_returns_once_the_actor_answers(orca_home: Path, tmp_path: Path) -> None:
    """`orca restart ptyd && orca term ls` works: restart waits for the new process, as
    `orca up` does; the keeper is no actor to restart, and completion does not offer it."""
    write_config(orca_home, RESTART_TREE)
    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        (before,) = user.json("status")["actors"]
        restarted = user.run("restart", "ptyd")
        assert restarted.returncode == 0, restarted.stderr
        listed = user.run("term", "ls")
        assert listed.returncode == 0, listed.stderr
        (after,) = user.json("status")["actors"]
        assert after["state"] == "running" and after["pid"] != before["pid"]
        assert f"(pid {after['pid']})" in restarted.stdout
        keeper = user.run("restart", "keeper")
        assert keeper.returncode == 2 and "no actor named 'keeper'" in keeper.stderr
        assert user.ok("__complete", "--", "restart", "").split() == ["ptyd"]
    finally:
        user.run("down", "--kill-terminals")


def test_hooks_status_shows_a_broken_config_as_that_agents_row(orca_home: Path, tmp_path: Path) -> None:
    """One agent's unreadable config is its own error row; the others print (exit 0)."""
    user = User(orca_home, tmp_path / "user")
    gemini = user.user_home / ".gemini" / "settings.json"
    gemini.parent.mkdir(parents=True)
    gemini.write_text("{not json")
    shown = user.run("hooks", "status")
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line.split()[1] for line in shown.stdout.splitlines()[1:4]}
    assert rows == {"claude": "no", "codex": "no", "gemini": "error"}
    assert "gemini" in shown.stderr and "not valid JSON" in shown.stderr
    report = {r["agent"]: r for r in user.json("hooks", "status")["integrations"]}
    assert report["claude"]["error"] is None and "not valid JSON" in report["gemini"]["error"]


def test_dirty_counts_tell_modified_from_untracked(orca_home: Path, tmp_path: Path) -> None:
    """One modified and one untracked file read `1m 1u` (both were `u`)."""
    project = make_git_repo(tmp_path / "project")
    (project / "README").write_text("changed\n")
    (project / "new.txt").write_text("new\n")
    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        user.ok("repo", "add", str(project))
        (row,) = user.ok("worktree", "ls").splitlines()[1:]
        assert row.split()[3:5] == ["1m", "1u"], row
    finally:
        user.run("down")
