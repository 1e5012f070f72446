"""The real Codex CLI (from npm) in an Orca terminal, against a fake of OpenAI's Responses
API on 127.0.0.1 (issue 40 items 7-8).

Codex 0.171 is driven offline through a ``[model_providers.NAME]`` table in
``$CODEX_HOME/config.toml`` (``base_url``, ``wire_api = "responses"``, ``env_key``) and
the project marked ``trust_level = "trusted"``; ``orca hooks install codex`` writes its
hooks and their trust entries into that same ``CODEX_HOME``. On a session's first turn a
command is asked for (``-a untrusted``) and approved with ``orca approve``: the row goes
blocked and stays so until the answer (the legacy notify of Codex's title thread no
longer ends it), then done; a second ask refused with Esc in Codex's own dialog ends
``waiting``, never ``working``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from support.agent_clis import agent_cli
from support.fake_openai import FakeOpenAI, fake_openai
from support.journey import User, make_git_repo


@pytest.fixture(scope="module")
def codex() -> Path:
    binary = agent_cli("codex")
    if binary is None:
        pytest.skip("npm could not install @openai/codex (.ci/run installs npm)")
    return binary


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


class Watch:
    def __init__(self, user: User) -> None:
        self.lines: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "orca.cli.main", "watch", "--json"],
            env=user.env,
            stdout=subprocess.PIPE,
            text=True,
        )

    async def until(self, holds: Any) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            raw = await trio.to_thread.run_sync(self.proc.stdout.readline, abandon_on_cancel=True)
            assert raw, "orca watch ended"
            line = json.loads(raw)
            self.lines.append(line)
            if holds(line):
                return dict(line)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _set(pane: str, state: str) -> Any:
    return lambda e: e["event"] == "set" and e["paneKey"] == pane and e["state"] == state


def _vault(user: User, want: int) -> dict[str, Any]:
    """``orca vault usage --json``'s total once it counts ``want`` requests, read again
    after each ``vault.changed``."""
    from orca.client.sync import subscribe
    from orca.contracts import vault

    sub = subscribe(vault.CONTRACT.actor, [vault.CHANGED], consumer="tests", paths=user.paths)
    try:
        assert sub.wait_live(10.0)
        while True:
            total: dict[str, Any] = user.json("vault", "usage")["total"]
            if total["requests"] >= want:
                return total
            assert sub.receive(30.0) is not None, f"the vault stopped changing at {total}"
    finally:
        sub.close()


async def test_real_codex_turn_lights_and_vault(world: tuple[User, FakeOpenAI, Path]) -> None:
    """``codex exec`` in an Orca terminal: its hooks light the row working, then done;
    the vault indexes its rollout (the conversation, which Codex 0.171 writes only as
    response_item messages) and its tokens equal the usage the fake API returned."""
    user, fake, _project = world
    watch = Watch(user)
    handle = ""
    try:
        with trio.fail_after(120):
            session = user.new_terminal(
                "project", "codex", "exec", "orca-run: echo hello-from-codex ## zebrafish"
            )
            pane, handle = session["paneKey"], session["handle"]
            await watch.until(_set(pane, "working"))
            await watch.until(_set(pane, "done"))
            with fake.lock:
                sent = list(fake.usage)
            total = await trio.to_thread.run_sync(_vault, user, len(sent))
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
