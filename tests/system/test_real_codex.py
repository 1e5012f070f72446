"""The real Codex CLI (from npm) in an Orca terminal, against a fake of OpenAI's Responses
API on 127.0.0.1 (issue 40 items 7-8).

Codex 0.171 is driven offline through a ``[model_providers.NAME]`` table in
``$CODEX_HOME/config.toml`` (``base_url``, ``wire_api = "responses"``, ``env_key``) and
the project marked ``trust_level = "trusted"``; ``orca hooks install codex`` writes its
hooks and their trust entries into that same ``CODEX_HOME``. ``codex exec`` lights the
row and fills the vault; interactive Codex (``-a on-request``) asks on a session's first
turn, approved with ``orca approve``: the row goes blocked and stays so until the answer
(the legacy notify of Codex's title thread no longer ends it), then done; a second ask
refused with Esc in Codex's terminal ends ``waiting``, never ``working``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from support.agent_clis import require_agent_cli
from support.dirwatch import until_exists
from support.fake_openai import FakeOpenAI, fake_openai
from support.journey import User, make_git_repo
from support.watch import Watch, state_is, until_screen, vault_total

from actors.hooks.answer_watch import INTERRUPTED_DETAIL


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_agent_cli("codex")


@pytest.fixture
def world(orca_home: Path, tmp_path: Path, codex: Path) -> Iterator[tuple[User, FakeOpenAI, Path]]:
    user = User(orca_home, tmp_path / "user")
    codex_home = user.user_home / "codex-home"
    codex_home.mkdir()
    project = make_git_repo(tmp_path / "project")
    with fake_openai() as (fake, url):
        (codex_home / "config.toml").write_text(
            'model = "gpt-5-codex"\nmodel_provider = "fake"\n\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{url}"\n'
            'wire_api = "responses"\nenv_key = "FAKE_OPENAI_KEY"\n\n'
            f'[projects."{project}"]\ntrust_level = "trusted"\n'
        )
        user.env.update(
            {
                "CODEX_HOME": str(codex_home),
                "FAKE_OPENAI_KEY": "fake-key",
                "PATH": f"{codex.parent}:{user.env['PATH']}",
                "ORCA_VAULT_CODEX_DIRS": str(codex_home),
            }
        )
        user.ok("up")
        try:
            user.ok("hooks", "install", "codex")
            user.ok("repo", "add", str(project))
            yield user, fake, project
        finally:
            user.run("down", "--kill-terminals")


async def test_real_codex_turn_lights_and_vault(world: tuple[User, FakeOpenAI, Path]) -> None:
    """``codex exec`` in an Orca terminal: its hooks light the row working, then done;
    the vault indexes its rollout (the conversation, which Codex 0.171 writes only as
    response_item messages) and its tokens equal the usage the fake API returned."""
    user, fake, _project = world
    watch = Watch(user)
    handle = ""
    try:
        with trio.fail_after(120):
            await watch.live()  # its rows printed: every change from here is seen
            session = user.new_terminal(
                "project", "codex", "exec", "orca-run: echo hello-from-codex ## zebrafish"
            )
            pane, handle = session["paneKey"], session["handle"]
            await watch.until(state_is(pane, "working"))
            await watch.until(state_is(pane, "done"))
            with fake.lock:
                sent = list(fake.usage)
            total = await trio.to_thread.run_sync(vault_total, user, len(sent))
            assert total["requests"] == len(sent)
            assert total["inputTokens"] + total["cacheReadTokens"] == sum(
                u["input_tokens"] for u in sent
            )
            assert total["outputTokens"] == sum(u["output_tokens"] for u in sent)
            # A word only the person typed: found in the conversation itself.
            found = user.json("vault", "search", "zebrafish")
            assert found["hits"], found
    except BaseException:
        screen = user.run("term", "read", handle).stdout if handle else ""
        compact = [(e["event"], e.get("state") or e.get("outcome"), e.get("detail")) for e in watch.lines]
        print("SCREEN", screen[-1500:], "\nWATCH", compact, "\nREQS", len(fake.requests))
        raise
    finally:
        watch.close()


async def test_real_codex_interactive_approved_from_orca_and_refused_in_its_dialog(
    world: tuple[User, FakeOpenAI, Path],
) -> None:
    """Interactive Codex (``-a on-request``, the fake model asking to run a command
    outside the sandbox): on the session's first turn the ask is held; the row stays
    blocked until ``orca approve`` (the legacy notify of Codex's title thread does not
    end it), then done. A second ask, Esc in Codex's terminal while Orca holds (Codex
    runs the hook before it draws its own dialog): the hold is released at once, Codex
    interrupts the turn with no hook, and the row is ``waiting``, never ``working``."""
    user, _fake, project = world
    watch = Watch(user)
    handle = ""
    try:
        with trio.fail_after(180):
            await watch.live()
            session = user.new_terminal("project", "codex", "-a", "on-request")
            pane, handle, sid = session["paneKey"], session["handle"], session["sessionId"]
            await trio.to_thread.run_sync(
                until_screen, user, sid, pane, "Ask Codex", abandon_on_cancel=True
            )

            async def prompt(text: str) -> dict[str, Any]:
                user.ok("term", "send", handle, text)
                await trio.to_thread.run_sync(
                    until_screen, user, sid, pane, f"› {text}", abandon_on_cancel=True
                )
                user.ok("term", "send", handle, "\r")
                await watch.until(state_is(pane, "blocked"))
                return await watch.until(lambda e: e["event"] == "ask" and e["paneKey"] == pane)

            # 1. The session's first turn, approved from Orca: blocked until the answer
            # (the legacy notify of Codex's title thread does not end it), then done.
            ask = await prompt("orca-ask: touch approved-one")
            assert (ask["toolName"], ask["summary"]) == ("Bash", "touch approved-one")
            assert user.ok("approve", handle).strip() == "allowed: Bash: touch approved-one"
            await watch.until(state_is(pane, "done"))
            # Codex runs the command in a terminal of its own and may end its turn (Stop)
            # before that terminal's touch has run (CI, 1 run in 5).
            await until_exists(project / "approved-one")
            first = watch.states(pane)
            assert first[first.index("blocked") + 1] == "working", first  # answered, not done

            # 2. Esc in Codex's terminal while Orca holds: the hold is released at once
            # (answered there), Codex interrupts its turn, prints its line and sends no
            # hook: the row is waiting, never left working; nothing ran.
            await prompt("orca-ask: touch refused-two")
            user.ok("term", "send", handle, "\x1b")
            answered = await watch.until(lambda e: e["event"] == "answered" and e["paneKey"] == pane)
            assert answered["outcome"] == "answered_elsewhere"
            idle = await watch.until(
                lambda e: e["event"] == "set" and e["paneKey"] == pane and e["state"] != "working"
            )
            assert (idle["state"], idle["detail"]) == ("waiting", INTERRUPTED_DETAIL), idle
            assert not (project / "refused-two").exists()
            states = watch.states(pane)
            assert states[0] == "waiting" and states[-1] == "waiting"
    except BaseException:
        screen = user.run("term", "read", handle).stdout if handle else ""
        compact = [(e["event"], e.get("state") or e.get("outcome"), e.get("detail")) for e in watch.lines]
        print("SCREEN", screen[-2500:], "\nWATCH", compact)
        raise
    finally:
        watch.close()
