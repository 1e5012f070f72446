"""The real Claude Code CLI (from npm) in Orca terminals, against a fake of its model API
on 127.0.0.1 (issue 40 item 7): what ``orca watch --json`` prints is checked against what
happened, turn by turn.

Facts this rests on (Claude Code 2.1.x): it needs ``hasCompletedOnboarding``,
``customApiKeyResponses.approved`` (the key's last 20 characters) and the project's
``hasTrustDialogAccepted`` in ``$HOME/.claude.json``; with ``ANTHROPIC_BASE_URL`` it
calls ``HEAD /`` and ``POST /v1/messages?beta=true``; it shows its permission dialog
while its PermissionRequest hook runs.

One session, five turns: a Bash command approved from Orca (``orca approve``), one
denied from Orca (``orca deny``, whose reason reaches the model in the tool's result),
one refused with "No" and one cancelled with Esc in Claude's own dialog (Claude prints
its interrupt line and sends no hook; the row must be ``waiting``, not ``working``), one
approved in Claude's dialog, then ``/exit``; a second Claude killed with ``kill -9`` ends its row with
its exit code; the vault's token totals equal the usage the fake API
returned.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from support.agent_clis import require_agent_cli
from support.fake_anthropic import FakeAnthropic, fake_anthropic
from support.journey import User, make_git_repo
from support.watch import Watch, exits_after, state_is, until_screen, vault_total

from actors.hooks.answer_watch import INTERRUPTED_DETAIL

API_KEY = "sk-ant-api03-orca-test-key-0123456789abcdefghij"


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_agent_cli("claude")


@pytest.fixture
def world(
    orca_home: Path, tmp_path: Path, claude: Path
) -> Iterator[tuple[User, FakeAnthropic, Path]]:
    user = User(orca_home, tmp_path / "user")
    home = user.user_home
    project = make_git_repo(tmp_path / "project")
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
                "projects": {str(project): {"hasTrustDialogAccepted": True}},
            }
        )
    )
    with fake_anthropic() as (fake, url):
        user.env.update(
            {
                "ANTHROPIC_BASE_URL": url,
                "ANTHROPIC_API_KEY": API_KEY,
                "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "PATH": f"{claude.parent}:{user.env['PATH']}",
                # The vault reads the transcripts where the real CLI writes them.
                "ORCA_VAULT_CLAUDE_DIRS": str(home / ".claude" / "projects"),
                # What became of each hook call, for a failure's report (_print_failure).
                "ORCA_HOOK_TRACE": str(tmp_path / "hook-trace.log"),
            }
        )
        user.ok("up")
        try:
            user.ok("hooks", "install", "claude")
            user.ok("repo", "add", str(project))
            yield user, fake, project
        finally:
            user.run("down", "--kill-terminals")


def _ask(pane: str) -> Any:
    return lambda e: e["event"] == "ask" and e["paneKey"] == pane


def _answered(pane: str) -> Any:
    return lambda e: e["event"] == "answered" and e["paneKey"] == pane


DIALOG = "Do you want to proceed?"  # Claude Code's permission dialog


# How a held request ends when the user answers in Claude's own dialog: our word of the
# key (ptyd's input) releases it, or, when that word lags (a loaded machine: run 1 of
# 9e78855), Claude acts on the key first and drops its hook call: withdrawn.
IN_ITS_TERMINAL = ("answered_elsewhere", "withdrawn")


async def test_real_claude_approved_denied_cancelled_and_exit(
    world: tuple[User, FakeAnthropic, Path],
) -> None:
    user, fake, project = world
    watch = Watch(user)
    handle = ""
    try:
        with trio.fail_after(240):
            await watch.live()  # its rows printed: every change from here is seen
            session = user.new_terminal("project", "claude", "--permission-mode", "default")
            pane, handle, sid = session["paneKey"], session["handle"], session["sessionId"]
            await watch.until(state_is(pane, "waiting"))  # SessionStart: ready

            async def prompt(text: str) -> dict[str, Any]:
                """Type a prompt; the permission Claude asks for, held by Orca, once its
                dialog is on the screen."""
                user.ok("term", "send", handle, text)
                user.ok("term", "send", handle, "\r")
                await watch.until(state_is(pane, "blocked"))
                ask = await watch.until(_ask(pane))
                await trio.to_thread.run_sync(
                    until_screen, user, sid, pane, DIALOG, abandon_on_cancel=True
                )
                return ask

            async def answered_until(key: str, settled: str) -> dict[str, Any]:
                """The row's next state once ``key``, typed in Claude's dialog, took:
                ``settled`` or, after three tries, still blocked. Under load Claude's
                dialog sometimes drops the key as the held hook is released (CI, 2 of 5
                runs): it then says it still needs the permission (its Notification
                hook), and the user presses the key again, as a person would."""
                for _ in range(3):
                    got = await watch.until(
                        lambda e: e["event"] == "set" and e["paneKey"] == pane
                        and e["state"] in (settled, "blocked")
                    )  # fmt: skip
                    if got["state"] == settled:
                        break
                    await trio.to_thread.run_sync(
                        until_screen, user, sid, pane, DIALOG, abandon_on_cancel=True
                    )
                    user.ok("term", "send", handle, key)
                return got

            # 1. Approved from Orca: the command runs, the turn ends done.
            ask = await prompt("orca-run: touch approved-one")
            assert (ask["toolName"], ask["summary"]) == ("Bash", "touch approved-one")
            assert user.ok("approve", handle).strip() == "allowed: Bash: touch approved-one"
            assert (await watch.until(_answered(pane)))["outcome"] == "allow"
            await watch.until(state_is(pane, "done"))
            assert (project / "approved-one").exists()

            # 2. Denied from Orca: nothing runs; Claude is told why, and its turn ends.
            await prompt("orca-run: touch denied-two")
            with fake.lock:
                before_deny = len(fake.requests)
            denied = user.json("deny", handle, "--reason", "not this one")["answer"]
            assert denied["settlement"]["outcome"] == "deny"
            settled = await watch.until(
                lambda e: e["event"] == "set" and e["paneKey"] == pane
                and e["state"] in ("done", "waiting")
            )  # fmt: skip
            assert settled["state"] in ("done", "waiting")
            assert not (project / "denied-two").exists()
            with fake.lock:  # the reason reached the model, in the refused tool's result
                after_deny = [json.dumps(body) for body in fake.requests[before_deny:]]
            assert any("not this one" in body for body in after_deny), after_deny

            # 3a. Refused in Claude's own dialog ("4", its "No"; 2.1.332 offers 1. Yes,
            # 2. always allow, 3. auto mode, 4. No): as with Esc, no hook comes; the row
            # is waiting, not working.
            await prompt("orca-run: touch refused-three")
            user.ok("term", "send", handle, "4")
            assert (await watch.until(_answered(pane)))["outcome"] in IN_ITS_TERMINAL
            idle = await answered_until("4", "waiting")
            assert idle["state"] == "waiting"
            assert idle["detail"] == INTERRUPTED_DETAIL
            assert not (project / "refused-three").exists()

            # 3. Cancelled in Claude's own dialog (Esc): no hook comes, Claude is idle
            # at its prompt: the row is waiting, never left working.
            await prompt("orca-run: touch cancelled-three")
            user.ok("term", "send", handle, "\x1b")
            assert (await watch.until(_answered(pane)))["outcome"] in IN_ITS_TERMINAL
            idle = await watch.until(state_is(pane, "waiting"))
            assert idle["detail"] == INTERRUPTED_DETAIL
            assert not (project / "cancelled-three").exists()

            # 4. Approved in Claude's own dialog (Enter: its default, "Yes"): the held
            # request is released at once, the command runs.
            await prompt("orca-run: touch answered-four")
            user.ok("term", "send", handle, "\r")
            assert (await watch.until(_answered(pane)))["outcome"] in IN_ITS_TERMINAL
            end = await answered_until("\r", "done")
            assert end["state"] == "done"
            assert (project / "answered-four").exists()

            # /exit: the terminal ends, its row goes.
            user.ok("term", "send", handle, "/exit")
            user.ok("term", "send", handle, "\r")
            await watch.until(lambda e: e["event"] == "clear" and e["paneKey"] == pane)

            # kill -9 of a second Claude (its whole process group, as the OOM killer or
            # a crash would leave it): no hook comes, its terminal ends, and the row goes
            # with the code the kill gave.
            second = user.new_terminal("project", "claude", "--permission-mode", "default")
            await watch.until(state_is(second["paneKey"], "waiting"))  # SessionStart
            os.killpg(second["pid"], signal.SIGKILL)  # the terminal's session leader
            gone = await watch.until(
                lambda e: e["event"] == "clear" and e["paneKey"] == second["paneKey"]
            )
            assert (gone["reason"], gone.get("exitCode")) == ("pty_exited", 137), gone

            # Never working while idle: each turn's states, as orca watch printed them.
            states = watch.states(pane)
            assert states[0] == "waiting" and "working" in states and states[-1] == "done"

            # The vault's tokens are the usage the fake API returned, exactly.
            with fake.lock:
                sent = list(fake.usage)
            total = await trio.to_thread.run_sync(vault_total, user, len(sent))
            assert total["requests"] == len(sent)
            assert total["inputTokens"] == sum(u["input_tokens"] for u in sent)
            assert total["outputTokens"] == sum(u["output_tokens"] for u in sent)
    except BaseException:
        _print_failure(user, fake, watch, handle)
        raise
    finally:
        watch.close()


def _texts_of(body: dict[str, Any]) -> str:
    """Every text of a Messages API request's user and assistant turns."""
    out = []
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        out.extend(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
    return " ".join(out)


async def _turn(user: User, watch: Watch, session: dict[str, Any], text: str) -> None:
    """Type a prompt into Claude's pane (Enter once it is in the box); until done."""
    pane, handle, sid = session["paneKey"], session["handle"], session["sessionId"]
    user.ok("term", "send", handle, text)
    await trio.to_thread.run_sync(until_screen, user, sid, pane, text, abandon_on_cancel=True)
    user.ok("term", "send", handle, "\r")
    await watch.until(state_is(pane, "done"))


def _print_failure(user: User, fake: FakeAnthropic, watch: Watch, handle: str) -> None:
    """What a failed test saw: the pane's screen, the watched events, the requests the
    model API had, the hooks and ptyd logs' tails and the hook script's own trace."""
    screen = user.run("term", "read", handle).stdout if handle else ""
    compact = [(e["event"], e.get("state") or e.get("outcome"), e.get("detail")) for e in watch.lines]
    print("SCREEN", screen[-1500:], "\nWATCH", compact, "\nREQS", len(fake.requests))
    for name in ("hooks", "ptyd"):
        log = user.paths.log_file(name)
        print(name.upper(), "LOG", log.read_text()[-3000:] if log.exists() else "none")
    trace = Path(user.env["ORCA_HOOK_TRACE"])
    print("HOOK CALLS", trace.read_text()[-3000:] if trace.exists() else "none")
    try:  # what hooks holds now (a row the watch did not show, or none)
        from orca.client.sync import invoke
        from orca.contracts import hooks

        snap = invoke(hooks.SNAPSHOT, paths=user.paths, timeout=5)
        print("ROWS", [(r.pane_key, r.state, r.updated_at_ms) for r in snap.rows])
    except Exception as exc:  # a report must not hide the failure it reports
        print("ROWS unknown:", exc)


async def _on_disk(user: User, fake: FakeAnthropic) -> None:
    """Until the vault counts every answer so far: Claude writes a turn's reply to its
    transcript just after its Stop hook, and a reboot a few ms later (a kill -9 of
    everything) lost it once; the resumed Claude then filled the gap with "No response
    requested." and the totals missed the turn."""
    with fake.lock:
        answered = len(fake.usage)
    await trio.to_thread.run_sync(vault_total, user, answered)


def _reboot(user: User) -> str:
    """kill -9 of every Orca process, the keeper and every agent, the runtime folder
    wiped (what a reboot leaves); then ``orca up``, its output returned."""
    from support.procs import kill_like_a_reboot

    kill_like_a_reboot(user.paths)
    shutil.rmtree(user.paths.runtime_dir)
    return user.ok("up")


def _asked_with(fake: FakeAnthropic, since: int, text: str) -> str:
    """The texts of the first request after ``since`` whose conversation holds ``text``."""
    with fake.lock:
        later = [_texts_of(body) for body in fake.requests[since:]]
    found = [t for t in later if text in t]
    assert found, later
    return found[0]


async def test_real_claude_resumes_its_conversation_in_its_pane_after_a_simulated_reboot(
    world: tuple[User, FakeAnthropic, Path],
) -> None:
    """Issue 34: a turn, then a simulated reboot; ``orca up`` lists the agent, and
    ``orca term resume`` starts Claude again in the same pane on the same conversation:
    the next request the model API receives carries the earlier turn."""
    user, fake, _project = world
    watch = Watch(user)
    handle = ""
    try:
        with trio.fail_after(240):
            await watch.live()
            session = user.new_terminal("project", "claude", "--permission-mode", "default")
            pane, handle, sid = session["paneKey"], session["handle"], session["sessionId"]
            await watch.until(state_is(pane, "waiting"))  # SessionStart: ready
            await _turn(user, watch, session, "remember the word narwhal")
            await _on_disk(user, fake)
            watch.close()

            said = _reboot(user)
            assert f"1 agent running when the machine went down can resume: {handle}" in said
            [lost] = [s for s in user.json("term", "ls", "--all")["sessions"] if s["sessionId"] == sid]
            assert lost["lost"] and not lost["running"], lost

            watch = Watch(user)
            await watch.live()
            resumed = user.json("term", "resume", handle)["session"]
            handle = resumed.get("handle") or resumed["sessionId"]  # a failure shows its screen
            assert resumed["paneKey"] == pane  # the same pane: its tab and layout place
            assert resumed["argv"][-2:] == ["--resume", resumed["resumed"]]
            assert "--permission-mode" in resumed["argv"]
            await watch.until(state_is(pane, "waiting"))  # SessionStart (resume)
            with fake.lock:
                since = len(fake.requests)
            await _turn(user, watch, resumed, "which word was it")
            assert "remember the word narwhal" in _asked_with(fake, since, "which word was it")
            # The vault files both halves of the conversation under its one pane.
            with fake.lock:
                sent = list(fake.usage)
            await trio.to_thread.run_sync(vault_total, user, len(sent))
            by_pane = user.json("vault", "usage", "--by", "pane")["rows"]
            assert [(r["key"], r["requests"]) for r in by_pane] == [(pane, len(sent))], by_pane
    except BaseException:
        _print_failure(user, fake, watch, handle)
        raise
    finally:
        watch.close()


async def test_resume_on_start_brings_back_what_ran_and_leaves_what_the_user_ended(
    world: tuple[User, FakeAnthropic, Path],
) -> None:
    """Issue 34: ``resume_on_start = true``: after a simulated reboot, ``orca up`` alone
    resumes the Claude that was running, in its pane, on its conversation; the one the
    user ended with /exit stays ended."""
    user, fake, _project = world
    (user.paths.config_dir / "ptyd.toml").write_text("resume_on_start = true\n")
    user.ok("restart", "ptyd")  # ptyd reads its settings when it starts
    watch = Watch(user)
    try:
        with trio.fail_after(240):
            await watch.live()
            running = user.new_terminal("project", "claude", "--permission-mode", "default")
            ended = user.new_terminal("project", "claude")
            pane = running["paneKey"]
            # SessionStart of each, in either order: the second one's line may have been
            # read while waiting for the first (run 1 of five, a8938c4).
            for s in (running, ended):
                await watch.seen_or_until(state_is(s["paneKey"], "waiting"))
            await _turn(user, watch, running, "remember the word okapi")
            await _on_disk(user, fake)
            user.ok("term", "send", ended["handle"], "/exit")
            # Ended on purpose: its process gone and its exit recorded before the reboot
            # (its row clears on SessionEnd, a moment before the process ends).
            await trio.to_thread.run_sync(
                exits_after, user, ended["sessionId"],
                lambda: user.ok("term", "send", ended["handle"], "\r"),
            )  # fmt: skip
            watch.close()

            said = _reboot(user)
            assert "can resume" not in said  # ptyd resumes them itself
            watch = Watch(user)
            await watch.live()
            # Its SessionStart, resumed: perhaps before this watch started (in its rows).
            await watch.seen_or_until(state_is(pane, "waiting"))
            live = [s for s in user.json("term", "ls")["sessions"] if s["running"]]
            assert [s["paneKey"] for s in live] == [pane]  # the /exit one stays ended
            [again] = live
            assert again["argv"][-2] == "--resume", again
            with fake.lock:
                since = len(fake.requests)
            await _turn(user, watch, {**again, "handle": again["sessionId"]}, "which animal")
            assert "remember the word okapi" in _asked_with(fake, since, "which animal")
    except BaseException:
        print("TERMS", user.run("term", "ls", "--all").stdout)
        log = user.paths.log_file("ptyd")
        print("PTYD LOG", log.read_text()[-3000:] if log.exists() else "none")
        raise
    finally:
        watch.close()


def _git_status(path: Path) -> str:
    import subprocess

    status = ["git", "-C", str(path), "status", "--porcelain"]
    return subprocess.run(status, capture_output=True, text=True, check=True).stdout


async def test_real_claude_forks_into_a_new_worktree_with_the_uncommitted_work(
    world: tuple[User, FakeAnthropic, Path],
) -> None:
    """Issue 34: ``orca term fork``: a new worktree from the agent's, holding its
    uncommitted work (the source untouched), and a new pane running a fork of the
    conversation: its first request carries the parent's turns."""
    user, fake, project = world
    watch = Watch(user)
    try:
        with trio.fail_after(240):
            await watch.live()
            parent = user.new_terminal("project", "claude", "--permission-mode", "default")
            await watch.until(state_is(parent["paneKey"], "waiting"))  # SessionStart
            await _turn(user, watch, parent, "remember the word quokka")
            # The agent's uncommitted work: a change and a new file.
            (project / "README").write_text("changed by the agent\n")
            (project / "notes.txt").write_text("new\n")
            before = _git_status(project)

            forked = user.json("term", "fork", parent["handle"], "--name", "quokka-fork")["fork"]
            assert forked["argv"][-3:-1] == ["--resume", forked["argv"][-2]]
            assert forked["argv"][-1] == "--fork-session"
            path = Path(forked["worktree"]["path"])
            assert (path / "README").read_text() == "changed by the agent\n"
            assert (path / "notes.txt").read_text() == "new\n"
            assert _git_status(project) == before  # the source untouched, its index too
            assert _git_status(path) == before == " M README\n?? notes.txt\n"  # uncommitted

            await watch.until(state_is(forked["paneKey"], "waiting"))  # its SessionStart
            with fake.lock:
                since = len(fake.requests)
            await _turn(user, watch, forked, "which animal was it")
            assert "remember the word quokka" in _asked_with(fake, since, "which animal was it")
            # The parent goes on in its own pane.
            running = {s["paneKey"] for s in user.json("term", "ls")["sessions"] if s["running"]}
            assert {parent["paneKey"], forked["paneKey"]} <= running
            # The vault files each half under its own pane.
            with fake.lock:
                sent = list(fake.usage)
            await trio.to_thread.run_sync(vault_total, user, len(sent))
            by_pane = user.json("vault", "usage", "--by", "pane")["rows"]
            assert {r["key"] for r in by_pane} == {parent["paneKey"], forked["paneKey"]}, by_pane
    finally:
        watch.close()
