"""01-23: a real hooks process asks gitwatch to name a worktree from an agent's first
prompt, once, and its hook path does not depend on gitwatch's answer.

gitwatch is a stand-in served in the test (``worktree.renameFromFirstMessage`` only) on
the endpoint a real one binds, so each call hooks makes is seen, in order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from support.hooks_harness import WT, HooksProcess, running_hooks

from orca.actor import RpcServer
from orca.contracts import gitwatch
from orca.wire.errors import Unavailable

OTHER_PANE = "tab-2:3f1c2a9e-0000-4000-8000-000000000002"
OTHER_WT = "repo1::/src/wt-b"
NOT_PENDING = gitwatch.FirstMessageRename(renamed=False, skipped="no rename pending")

Answer = Callable[[gitwatch.FirstMessageArgs], gitwatch.FirstMessageRename]


@asynccontextmanager
async def standin_gitwatch(
    hooks: HooksProcess, answer: Answer
) -> AsyncIterator[trio.MemoryReceiveChannel[tuple[str, str]]]:
    """gitwatch's RPC socket answering ``answer``; yields each call's (worktree, message)."""
    send, receive = trio.open_memory_channel[tuple[str, str]](16)
    server = RpcServer("gitwatch")

    async def rename(args: gitwatch.FirstMessageArgs) -> gitwatch.FirstMessageRename:
        await send.send((args.worktree_id, args.message))
        return answer(args)

    server.register(gitwatch.WORKTREE_RENAME_FROM_FIRST_MESSAGE, rename)
    server.bind(hooks.paths.ipc_endpoint("gitwatch", "rpc"))
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            yield receive
            nursery.cancel_scope.cancel()
    finally:
        server.close()


def _prompt(text: str) -> dict[str, object]:
    return {"hook_event_name": "UserPromptSubmit", "session_id": "s-1", "prompt": text}


async def test_the_first_prompt_of_a_worktree_asks_gitwatch_once(orca_home: Path) -> None:
    """SessionStart asks nothing; the first prompt asks with its text; a later prompt of
    the same worktree asks nothing (the next call is another worktree's)."""
    with trio.fail_after(40):
        async with (
            running_hooks(orca_home) as hooks,
            standin_gitwatch(hooks, lambda _: NOT_PENDING) as calls,
        ):
            assert (await hooks.post("claude", {"hook_event_name": "SessionStart"}))[0] == 200
            assert (await hooks.post("claude", _prompt("Fix the login page\nthen tests")))[0] == 200
            assert await calls.receive() == (WT, "Fix the login page\nthen tests")
            assert (await hooks.post("claude", _prompt("And the docs")))[0] == 200
            other = {"X-Orca-Worktree-Id": OTHER_WT}
            status, _ = await hooks.post(
                "codex", _prompt("Add dark mode"), pane=OTHER_PANE, extra=other
            )
            assert status == 200
            # Had "And the docs" asked, its call would have come first (one socket, in order).
            assert await calls.receive() == (OTHER_WT, "Add dark mode")


async def test_a_failing_gitwatch_leaves_the_hook_path_alone(orca_home: Path) -> None:
    """gitwatch failing: the hook is answered and the row set as ever; the next prompt
    asks again."""
    answers = iter([Unavailable("store is catching up"), NOT_PENDING])

    def answer(_: gitwatch.FirstMessageArgs) -> gitwatch.FirstMessageRename:
        given = next(answers)
        if isinstance(given, Unavailable):
            raise given
        return given

    with trio.fail_after(40):
        async with running_hooks(orca_home) as hooks, standin_gitwatch(hooks, answer) as calls:
            status, body = await hooks.post("claude", _prompt("Fix the login page"))
            assert (status, body) == (200, {"outcome": "applied"})
            assert await calls.receive() == (WT, "Fix the login page")
            assert [r["state"] for r in await hooks.rows()] == ["working"]
            await hooks.post("claude", _prompt("Fix the login page, please"))
            assert await calls.receive() == (WT, "Fix the login page, please")


async def test_no_gitwatch_at_all_leaves_the_hook_path_alone(orca_home: Path) -> None:
    """Nobody serves gitwatch: the prompt's hook is answered at once, its row set."""
    with trio.fail_after(40):
        async with running_hooks(orca_home) as hooks:
            status, body = await hooks.post("claude", _prompt("Fix the login page"))
            assert (status, body) == (200, {"outcome": "applied"})
            assert [r["state"] for r in await hooks.rows()] == ["working"]
