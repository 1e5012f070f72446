"""Issue 12 "Must show": the status light never lies, per agent, on every surface.

For Claude Code, Codex and Gemini CLI: `orca hooks install <agent>` into a real HOME,
then a real Orca terminal runs a driver that feeds the *installed* hook command (read
back from the agent's own config file) recorded payloads in the tool's documented
shapes - a normal turn, a permission prompt approved (the user types into the pane),
denied, a failing tool, an API error, an interrupt, a subagent finishing late, the
agent replaced by a new launch, exiting and crashing. After every step the light is
read back three ways - an `orca.actor.Mirror` of the hooks actor, `orca worktree ps
--json` and the `orca watch --json` stream - and all three must be the expected one.

The driver reads its steps from a FIFO, not from its terminal: input typed into the
pane is itself evidence (an answered prompt), so only the "user answers" steps type.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path
from typing import Any

import trio
from support.journey import User, hooks_mirror, make_git_repo
from support.procs import kill_all

from orca.actor import open_rpc_client

# A step: ("hook", payload) through the installed hook command (stdin); ("notify",
# payload) through Codex's legacy notify argv; ("type", text) the user typing into the
# pane; ("exit", code); ("crash", _) kill -9 of the agent; ("replace", _) a new launch
# in the same pane. Then the expected light: a state, or None (no row) - for an ended
# PTY, ("exited", code) as `orca worktree ps` must show it.
Light = str | None | tuple[str, int]
Step = tuple[str, Any, Light]

CLAUDE: list[Step] = [
    ("hook", {"hook_event_name": "SessionStart", "source": "startup"}, "waiting"),
    ("hook", {"hook_event_name": "UserPromptSubmit", "prompt": "fix it"}, "working"),
    ("hook", {"hook_event_name": "PreToolUse", "tool_name": "Bash"}, "working"),
    ("hook", {"hook_event_name": "PermissionRequest", "tool_name": "Bash"}, "blocked"),
    ("type", "1", "working"),  # approved: the answer typed into the pane
    ("hook", {"hook_event_name": "PostToolUse", "tool_name": "Bash"}, "working"),
    ("hook", {"hook_event_name": "PermissionRequest", "tool_name": "Write"}, "blocked"),
    ("type", "3", "working"),  # denied: Claude fires no Stop ...
    ("hook", {"hook_event_name": "Notification", "notification_type": "idle_prompt"}, "waiting"),
    ("hook", {"hook_event_name": "UserPromptSubmit"}, "working"),
    ("hook", {"hook_event_name": "PreToolUse", "tool_name": "Bash"}, "working"),
    ("hook", {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash"}, "working"),
    ("hook", {"hook_event_name": "StopFailure", "error": "rate_limit"}, "done"),
    ("hook", {"hook_event_name": "UserPromptSubmit"}, "working"),
    ("type", "\x1b", "working"),  # interrupt: no Stop either, until the idle prompt
    ("hook", {"hook_event_name": "Notification", "notification_type": "idle_prompt"}, "waiting"),
    ("hook", {"hook_event_name": "UserPromptSubmit"}, "working"),
    ("hook", {"hook_event_name": "Stop"}, "done"),
    ("hook", {"hook_event_name": "SubagentStop"}, "done"),  # late: never reopens
    ("replace", None, None),
    ("hook", {"hook_event_name": "UserPromptSubmit"}, "working"),
    ("exit", 0, ("exited", 0)),
]

CODEX: list[Step] = [
    ("hook", {"hook_event_name": "SessionStart", "source": "startup"}, "waiting"),
    ("hook", {"hook_event_name": "UserPromptSubmit", "turn_id": "t1"}, "working"),
    ("hook", {"hook_event_name": "PreToolUse", "tool_name": "shell"}, "working"),
    ("hook", {"hook_event_name": "PermissionRequest", "tool_name": "shell"}, "blocked"),
    ("type", "y", "working"),
    ("hook", {"hook_event_name": "PostToolUse", "tool_name": "shell"}, "working"),
    ("hook", {"hook_event_name": "Stop", "turn_id": "t1"}, "done"),
    ("hook", {"hook_event_name": "UserPromptSubmit", "turn_id": "t2"}, "working"),
    ("notify", {"type": "agent-turn-complete", "thread-id": "th", "turn-id": "t2"}, "done"),
    ("hook", {"hook_event_name": "UserPromptSubmit", "turn_id": "t3"}, "working"),
    ("crash", None, ("exited", 137)),
]

GEMINI: list[Step] = [
    ("hook", {"hook_event_name": "SessionStart", "source": "startup"}, "waiting"),
    ("hook", {"hook_event_name": "BeforeAgent", "prompt": "go"}, "working"),
    ("hook", {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command"}, "working"),
    ("hook", {"hook_event_name": "Notification", "notification_type": "ToolPermission"}, "blocked"),
    ("type", "1", "working"),
    ("hook", {"hook_event_name": "AfterTool", "tool_name": "run_shell_command"}, "working"),
    ("hook", {"hook_event_name": "AfterAgent"}, "done"),
    ("hook", {"hook_event_name": "BeforeAgent"}, "working"),
    ("exit", 3, ("exited", 3)),
]

AGENTS = ("claude", "codex", "gemini")

DRIVER = r"""#!/bin/sh
# Reads "<kind> <arg>" lines from the FIFO and plays them as the agent would.
exec 3<"$1"
while IFS=' ' read -r kind arg <&3; do
  case $kind in
    hook) @HOOK@ < "$arg" ;;
    notify) @NOTIFY@ "$(cat "$arg")" ;;
    exit) exit "$arg" ;;
    crash) kill -9 $$ ;;
  esac
  echo "step $kind done"
done
"""


def _installed_command(user: User, agent: str) -> str:
    """The hook command exactly as `orca hooks install` wrote it into the agent's config."""
    path = {
        "claude": ".claude/settings.json",
        "codex": ".codex/hooks.json",
        "gemini": ".gemini/settings.json",
    }[agent]
    config = json.loads((user.user_home / path).read_text())
    groups = config["hooks"]["Stop" if agent != "gemini" else "AfterAgent"]
    (command,) = [h["command"] for g in groups for h in g["hooks"] if "orca" in h["command"]]
    return str(command)


def _notify_argv(user: User) -> str:
    argv = tomllib.loads((user.user_home / ".codex" / "config.toml").read_text())["notify"]
    return " ".join(shlex.quote(a) for a in argv)


class Watch:
    """`orca watch --json`, read line by line: the last line seen per pane."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.last: dict[str, dict[str, Any]] = {}
        self._buffer = b""

    async def wait_for(self, pane: str, light: str | None) -> None:
        assert self.process.stdout is not None
        while not self._shows(pane, light):
            chunk = await self.process.stdout.receive_some(65536)
            assert chunk, "orca watch ended"
            self._buffer += chunk
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                event = json.loads(line)
                if event["event"] != "live":  # the marker after the current rows
                    self.last[event["paneKey"]] = event

    def _shows(self, pane: str, light: str | None) -> bool:
        event = self.last.get(pane)
        if light is None:
            return event is not None and event["event"] == "clear"
        return event is not None and event["event"] == "set" and event["state"] == light


def _ps_light(user: User, pane: str) -> Any:
    agents = [a for w in user.json("worktree", "ps")["worktrees"] for a in w["agents"]]
    mine = [a for a in agents if a["paneKey"] == pane]
    if not mine:
        return None
    (agent,) = mine
    if agent["terminal"]["state"] == "exited":
        return ("exited", agent["terminal"]["exitCode"])
    assert agent["terminal"]["state"] == "live", agent
    return agent["state"]


async def _play(
    user: User, agent: str, steps: list[Step], worktree: str, tmp: Path, rows: Any, watch: Watch
) -> None:
    driver = tmp / f"driver-{agent}.sh"
    notify = _notify_argv(user) if agent == "codex" else "true"
    driver.write_text(
        DRIVER.replace("@HOOK@", _installed_command(user, agent)).replace("@NOTIFY@", notify)
    )
    fifo = tmp / f"steps-{agent}"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR)  # never blocks, keeps the FIFO open between steps
    try:
        sid = user.new_terminal(worktree, "/bin/sh", str(driver), str(fifo))["sessionId"]
        (session,) = [s for s in user.json("term", "ls")["sessions"] if s["sessionId"] == sid]
        pane = session["paneKey"]
        for n, (kind, arg, light) in enumerate(steps):
            if kind in ("hook", "notify"):
                payload = tmp / f"{agent}-{n}.json"
                payload.write_text(json.dumps({"session_id": f"{agent}-s", **arg}))
                os.write(fd, f"{kind} {payload}\n".encode())
            elif kind == "type":
                user.ok("term", "send", sid, arg)
            elif kind == "exit":
                os.write(fd, f"exit {arg}\n".encode())
            elif kind == "crash":
                os.write(fd, b"crash x\n")
            elif kind == "replace":
                fifo = tmp / f"steps-{agent}-{n}"
                os.mkfifo(fifo)
                old_fd, fd = fd, os.open(fifo, os.O_RDWR)
                os.close(old_fd)
                async with open_rpc_client(user.paths.ipc_endpoint("ptyd", "rpc")) as ptyd:
                    spawned = await ptyd.call(
                        "term.spawn",
                        {
                            "argv": ["/bin/sh", str(driver), str(fifo)],
                            "cwd": "/",
                            "worktreeId": session["worktreeId"],
                            "paneKey": pane,
                        },
                    )
                # the old terminal leaves; its exit must not remove the new agent's row
                user.ok("term", "kill", sid)
                sid = spawned["sessionId"]
            row_light = light if isinstance(light, str) else None
            where = f"{agent} step {n} {kind} {arg!r}"
            with trio.fail_after(20):
                await rows.wait_until(
                    lambda m, want=row_light: (
                        (m.state[pane].state if pane in m.state else None) == want
                    )
                )
                await watch.wait_for(pane, row_light)
            assert _ps_light(user, pane) == light, where
            mirror_row = rows.state.get(pane)
            assert (mirror_row.state if mirror_row else None) == row_light, where
    finally:
        os.close(fd)


async def test_the_light_is_right_after_every_step_on_every_surface(
    orca_home: Path, tmp_path: Path
) -> None:
    with trio.fail_after(240):
        user = User(orca_home, tmp_path / "user")
        project = make_git_repo(tmp_path / "project")
        user.ok("up")
        watch_proc: trio.Process | None = None
        notify_proc: trio.Process | None = None
        notify_fifo = tmp_path / "notifications"
        os.mkfifo(notify_fifo)
        notify_fd = os.open(notify_fifo, os.O_RDWR | os.O_NONBLOCK)
        try:
            user.ok("repo", "add", str(project))
            (repo,) = user.json("repo", "ls")["repos"]
            for agent in AGENTS:
                user.ok("hooks", "install", agent)
            status = user.json("hooks", "status")["integrations"]
            assert all(s["installed"] for s in status), status
            async with hooks_mirror(orca_home) as (rows, _):
                watch_proc = await trio.lowlevel.open_process(
                    [
                        *(sys.executable, "-m", "orca.cli.main", "watch", "--json"),
                    ],
                    env=user.env,
                    stdout=-1,
                )
                watch = Watch(watch_proc)
                # `--notify` with a user command: each title arrives on our FIFO.
                writer = f"printf '%s\\n' \"$0\" >> {shlex.quote(str(notify_fifo))}"
                notify_proc = await trio.lowlevel.open_process(
                    [
                        *(sys.executable, "-m", "orca.cli.main", "watch", "--notify"),
                        *("--notify-command", f"sh -c {shlex.quote(writer)}"),
                    ],
                    env=user.env,
                    stdout=subprocess.DEVNULL,
                )
                for agent, steps in (("claude", CLAUDE), ("codex", CODEX), ("gemini", GEMINI)):
                    name = f"wt-{agent}-{uuid.uuid4().hex[:6]}"
                    created = user.json("worktree", "create", repo["id"], name, "--setup", "skip")
                    await _play(
                        user, agent, steps, created["worktree"]["worktreeId"], tmp_path, rows, watch
                    )
                expected = {f"{a} {w}" for a in AGENTS for w in ("needs you", "is done")}
                titles: set[str] = set()
                stream = trio.lowlevel.FdStream(os.dup(notify_fd))
                async with stream:
                    buffer = b""
                    with trio.fail_after(20):
                        while not expected <= titles:
                            buffer += await stream.receive_some(4096)
                            titles |= {t.decode() for t in buffer.split(b"\n")}
                assert titles - {""} <= expected, titles
        finally:
            for proc in (watch_proc, notify_proc):
                if proc is not None:
                    kill_all([proc.pid])
                    await proc.wait()
            os.close(notify_fd)
            user.run("down", "--kill-terminals")
