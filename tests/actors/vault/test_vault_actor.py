"""The vault actor as its own process: indexing while agents write, binding, resuming.

Real ``vault`` (and ``hooks``) processes on a temp ORCA_HOME whose agent directories
(``support.procs.agent_roots``) the tests write transcripts into; every wait re-asks
the vault after each ``vault.changed`` event it publishes (never a sleep).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
from support.actors import EventTap, RunningActor, event_tap, running_actor, running_actors
from support.hooks_harness import post_hook
from support.procs import agent_roots, child_env
from support.vault import (
    append_jsonl,
    claude_assistant,
    claude_path,
    claude_usage,
    claude_user,
    codex_meta,
    codex_path,
    codex_tokens,
    codex_turn,
    codex_user,
    write_jsonl,
)

from actors.hooks.endpoint_file import read_endpoint_env
from orca.contracts import hooks
from orca.contracts import vault as contract
from orca.wire.errors import Conflict

R = TypeVar("R")
FAST = {"ORCA_VAULT_SCAN_S": "0.2"}
CWD = "/work/r/alpha"
PANE = "tab-7:0b6b1c1e-6a4f-4a3e-9d1c-5c1f2e3d4a5b"
WT = f"r1::{CWD}"


async def until(
    vault: RunningActor, tap: EventTap, op: Any, args: Any, done: Callable[[R], bool]
) -> R:
    """``op``'s answer once ``done`` holds, asked again after every ``vault.changed``."""
    while True:
        answer: R = await vault.invoke(op, args)
        if done(answer):
            return answer
        await tap.next_of(contract.CHANGED)


def total(report: contract.UsageReport) -> int:
    return report.total.total_tokens


def sonnet_line(session: str, n: int, output: int = 10) -> dict[str, Any]:
    return claude_assistant(
        session, CWD, message_id=f"msg-{session}-{n}", request_id=f"req-{n}",
        text=f"answer number {n}", usage=claude_usage(100, output), second=n % 3000,
    )  # fmt: skip


async def test_a_transcript_growing_while_it_is_indexed_is_read_once_whole(orca_home: Path) -> None:
    """An agent appends in bursts (some cut mid-line) while the vault reads its file in
    64 KiB steps, then writes half the file at once: every line is indexed once and
    every token counted once (the backlog after the last write was left unread: a step
    stopped at its budget made the next take the unchanged file for done)."""
    (orca_home / "config").mkdir(parents=True, exist_ok=True)
    (orca_home / "config" / "vault.toml").write_text("[vault]\nstep_bytes = 65536\n")
    path = claude_path(agent_roots(orca_home)["claude"], CWD, "GROW")
    write_jsonl(path, [claude_user("GROW", CWD, "start growing")])
    lines = 6000
    with trio.fail_after(20):
        async with running_actor("vault", orca_home, FAST) as vault, event_tap(orca_home, contract.CONTRACT) as tap:
            data = b"".join(
                (__import__("json").dumps(sonnet_line("GROW", n)) + "\n").encode() for n in range(lines)
            )
            cut = 0
            for burst in range(40):
                # bursts of 1/80 of the data, each ending wherever it ends (mid-line too)
                end = len(data) * (burst + 1) // 80
                with path.open("ab") as fh:
                    fh.write(data[cut:end])
                cut = end
                await trio.sleep(0.01)  # the agent's pace: the vault reads in between
            with path.open("ab") as fh:
                fh.write(data[cut:])  # then half of it at once: many steps after the last write
            expected = lines * (100 + 10)
            report = await until(vault, tap, contract.USAGE, contract.UsageArgs(), lambda r: total(r) >= expected)
            # the full-text table follows usage: search once it holds every row
            status = await until(vault, tap, contract.STATUS, None, lambda s: s.search_pending == 0)
            hits = await vault.invoke(contract.SEARCH, contract.SearchArgs(query="answer number 5999"))
    assert total(report) == expected and report.total.requests == lines
    assert status.entries == lines + 1  # every answer and the first prompt, once each
    assert (status.bad_lines, status.pending_files) == (0, 0)
    assert [h.snippet for h in hits.hits][:1] == ["answer number 5999"]


async def test_a_replaced_transcript_is_read_again_and_old_cursors_are_refused(orca_home: Path) -> None:
    """A file replaced under the same name (a new inode) is read from the start, its
    old rows dropped; a cursor from before is refused, the new search is complete."""
    root = agent_roots(orca_home)["claude"]
    path = claude_path(root, CWD, "REPL")
    write_jsonl(path, [claude_user("REPL", CWD, f"first version prompt {n}", second=n) for n in range(5)])
    with trio.fail_after(30):
        async with running_actor("vault", orca_home, FAST) as vault, event_tap(orca_home, contract.CONTRACT) as tap:
            first = contract.SearchArgs(query="prompt", limit=2)
            page = await until(vault, tap, contract.SEARCH, first, lambda p: p.next_cursor is not None)
            assert [h.snippet for h in page.hits] == ["first version prompt 4", "first version prompt 3"]
            fresh = path.with_name("new.tmp")
            write_jsonl(fresh, [claude_user("REPL", CWD, "second version prompt", second=9)])
            os.replace(fresh, path)
            replaced = await until(
                vault, tap, contract.SEARCH, contract.SearchArgs(query="prompt"),
                lambda p: p.generation > page.generation and len(p.hits) == 1,
            )  # fmt: skip
            with pytest.raises(Conflict, match="index changed"):
                await vault.invoke(contract.SEARCH, contract.SearchArgs(query="prompt", cursor=page.next_cursor))
    assert [h.snippet for h in replaced.hits] == ["second version prompt"]


async def test_damaged_files_never_stop_the_index(orca_home: Path) -> None:
    """Garbage lines are counted and skipped, a FIFO named like a transcript is passed
    over (never opened: it would block), a Codex rollout next to them is read whole."""
    roots = agent_roots(orca_home)
    damaged = claude_path(roots["claude"], CWD, "BAD")
    write_jsonl(damaged, [claude_user("BAD", CWD, "before the damage")])
    with damaged.open("ab") as fh:
        fh.write(b"\x00\xff not json\n[1, 2, 3]\n" + b"[" * 100_000 + b"\n")
    append_jsonl(damaged, [claude_user("BAD", CWD, "after the damage", second=5)])
    fifo = claude_path(roots["claude"], CWD, "FIFO")
    os.mkfifo(fifo)
    write_jsonl(
        codex_path(roots["codex"], "X9"),
        [codex_meta("X9", CWD), codex_turn(CWD), codex_user("tidy the imports"), codex_tokens(500, 100, 50, 0)],
    )
    with trio.fail_after(30):
        async with running_actor("vault", orca_home, FAST) as vault, event_tap(orca_home, contract.CONTRACT) as tap:
            status = await until(
                vault, tap, contract.STATUS, None, lambda s: s.entries == 3 and s.search_pending == 0
            )  # fmt: skip
            after = await vault.invoke(contract.SEARCH, contract.SearchArgs(query="after the damage"))
            codex = await vault.invoke(contract.USAGE, contract.UsageArgs(agent="codex"))
    assert (status.transcripts, status.bad_lines, status.errors) == (2, 3, [])
    assert len(after.hits) == 1
    assert codex.total.input_tokens == 400 and codex.total.cache_read_tokens == 100


async def test_a_restarted_vault_reads_on_from_where_it_stopped(orca_home: Path) -> None:
    """Offsets are committed with the rows: after a restart, lines written meanwhile are
    read, none twice."""
    path = claude_path(agent_roots(orca_home)["claude"], CWD, "RES")
    write_jsonl(path, [sonnet_line("RES", n) for n in range(50)])
    with trio.fail_after(40):
        async with running_actor("vault", orca_home, FAST) as vault, event_tap(orca_home, contract.CONTRACT) as tap:
            await until(vault, tap, contract.USAGE, contract.UsageArgs(), lambda r: r.total.requests == 50)
        append_jsonl(path, [sonnet_line("RES", n) for n in range(50, 80)])
        async with running_actor("vault", orca_home, FAST) as vault, event_tap(orca_home, contract.CONTRACT) as tap:
            report = await until(vault, tap, contract.USAGE, contract.UsageArgs(), lambda r: r.total.requests >= 80)
            status = await vault.invoke(contract.STATUS)
    assert report.total.requests == 80 and total(report) == 80 * 110
    assert status.entries == 80


async def test_a_hook_binds_its_session_and_transcript_to_the_pane(orca_home: Path) -> None:
    """A Claude hook names its session and transcript (outside the agent directories):
    hooks publishes and saves the binding, the vault reads that transcript and files it
    under the pane and its worktree, bound; a session no hook names stays unbound."""
    elsewhere = orca_home / "elsewhere" / "S-bound.jsonl"
    write_jsonl(elsewhere, [claude_user("S-bound", CWD, "bound prompt about parsers")])
    write_jsonl(
        claude_path(agent_roots(orca_home)["claude"], CWD, "S-free"),
        [claude_user("S-free", CWD, "unbound prompt about parsers")],
    )
    payload = {
        "hook_event_name": "SessionStart",
        "session_id": "S-bound",
        "transcript_path": str(elsewhere),
        "cwd": CWD,
        "source": "startup",
    }
    with trio.fail_after(40):
        async with running_actors(orca_home, "hooks", "vault", extra_env=FAST) as actors:
            hooks_actor, vault = actors["hooks"], actors["vault"]
            async with event_tap(orca_home, contract.CONTRACT) as tap, event_tap(orca_home, hooks.CONTRACT) as htap:
                endpoint = await hooks_actor.invoke(hooks.ENDPOINT)
                secret = read_endpoint_env(Path(endpoint.endpoint_file))["ORCA_HOOK_SECRET"]
                body = __import__("json").dumps(payload).encode()
                headers = {"X-Orca-Pane-Key": PANE, "X-Orca-Worktree-Id": WT, "X-Orca-Tab-Id": "tab-7"}
                status, _ = await post_hook(endpoint.port, secret, "claude", body, headers)
                assert status == 200
                bound = await htap.next_of(hooks.SESSION_BOUND)
                page = await until(
                    vault, tap, contract.SEARCH, contract.SearchArgs(query="parsers"),
                    lambda p: len(p.hits) == 2 and any(h.bound for h in p.hits),
                )  # fmt: skip
                # the same hook again binds nothing new
                await post_hook(endpoint.port, secret, "claude", body, headers)
            by_pane = await vault.invoke(contract.USAGE, contract.UsageArgs(by="pane"))
        assert by_pane.rows == []  # no tokens yet: only prompts
        async with running_actor("hooks", orca_home) as restarted:
            saved = await restarted.invoke(hooks.SESSION_BINDINGS)
    assert (bound.binding.session_id, bound.binding.transcript_path) == ("S-bound", str(elsewhere))
    hits = {h.session_id: h for h in page.hits}
    assert (hits["S-bound"].pane_key, hits["S-bound"].worktree_id, hits["S-bound"].bound) == (PANE, WT, True)
    assert (hits["S-free"].pane_key, hits["S-free"].bound) == ("", False)
    assert [(b.session_id, b.pane_key) for b in saved.bindings] == [("S-bound", PANE)]


async def test_a_rebuild_drops_the_index_and_reads_everything_again(orca_home: Path) -> None:
    """``vault.rebuild``: a fresh file, a new generation (older cursors refused), the
    same rows and totals once every transcript is read again."""
    path = claude_path(agent_roots(orca_home)["claude"], CWD, "RB")
    write_jsonl(path, [sonnet_line("RB", n) for n in range(30)])
    with trio.fail_after(40):
        async with running_actor("vault", orca_home, FAST) as vault, event_tap(orca_home, contract.CONTRACT) as tap:
            args = contract.SearchArgs(query="answer", limit=10)
            page = await until(vault, tap, contract.SEARCH, args, lambda p: p.next_cursor is not None)
            before = await until(vault, tap, contract.USAGE, contract.UsageArgs(), lambda r: r.total.requests == 30)
            rebuilt = await vault.invoke(contract.REBUILD)
            assert rebuilt.generation == page.generation + 1
            after = await until(vault, tap, contract.USAGE, contract.UsageArgs(), lambda r: r.total.requests == 30)
            with pytest.raises(Conflict):
                await vault.invoke(contract.SEARCH, contract.SearchArgs(query="answer", cursor=page.next_cursor))
            # the full-text table follows usage: the search answers once it caught up
            again = await until(vault, tap, contract.SEARCH, args, lambda p: p.next_cursor is not None)
    assert after.total == before.total and after.generation == rebuilt.generation
    assert [h.snippet for h in again.hits] == [h.snippet for h in page.hits]


async def test_status_says_where_it_looked_for_each_agents_transcripts(orca_home: Path) -> None:
    """``orca vault status`` names the directory each agent's transcripts are read from,
    where it looked when none is there, and why it looked nowhere when no directory is
    named (it said ``(no directory)``, and not where it had looked)."""
    roots = agent_roots(orca_home)
    write_jsonl(claude_path(roots["claude"], CWD, "ST"), [claude_user("ST", CWD, "hello")])
    env = {**FAST, "ORCA_VAULT_GEMINI_DIRS": ""}
    argv = [sys.executable, "-m", "orca.cli.main", "vault", "status"]
    with trio.fail_after(30):
        async with running_actor("vault", orca_home, env):
            done = await trio.run_process(
                argv, env=child_env(orca_home, env), capture_stdout=True, capture_stderr=True, check=False
            )
    assert done.returncode == 0, done.stderr
    codex = roots["codex"]
    assert [line for line in done.stdout.decode().splitlines() if line.startswith(("claude", "codex", "gemini"))] == [
        f"claude: {roots['claude'] / 'projects'}",
        f"codex: no directory at {codex / 'sessions'} or {codex / 'archived_sessions'}",
        "gemini: no directory named (ORCA_VAULT_GEMINI_DIRS is empty)",
    ]
