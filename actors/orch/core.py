"""The orchestrator's decisions, with no I/O: variants, names, the next step, states.

A run is N tasks, one per *variant* (one agent instance in its own worktree). Each task
walks the same steps, in order, and the database row of the task records how far it
got (``phase``); the shell asks :func:`next_step` what to do and does it through the
spawn fence (``actors/orch/fence.py``)::

    pending --worktree.create--> worktree --term.spawn--> terminal
            --(hooks: the agent is ready)--> term.write prompt --> prompted --> watched

Invariant: a phase is only ever written forward, in the transaction that records the
step's result, so a step whose result is on disk is never done again.

States shown to people (:func:`variant_state`) are projections of that phase, hooks'
row for the pane and ptyd's word on the terminal; nothing here re-decides what hooks
decided about the agent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import NamedTuple, cast

from orca.contracts.orch import AGENTS, MAX_VARIANTS, AgentCount, RunState, VariantState
from orca.model.agent_status import AgentStatusRow
from orca.user_env import which
from orca.wire.errors import BadRequest, Conflict

PHASES = ("pending", "worktree", "terminal", "prompted")

# What each agent is started as in its pane, and the key that submits a typed prompt.
# The hooks `orca hooks install` writes into the agents' settings report their turns.
AGENT_COMMANDS: dict[str, tuple[str, ...]] = {
    "claude": ("claude",),
    "codex": ("codex",),
    "gemini": ("gemini",),
}
SUBMIT_KEYS: dict[str, str] = {"claude": "\r", "codex": "\r", "gemini": "\r"}
# Bracketed paste: a multi-line prompt arrives as one input, not as N submitted lines.
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
# A worktree (and branch) name: git's ref rules, kept to what every filesystem takes.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_NAME_CHARS = 40


def check_agent_commands(agents: Iterable[str], path: str) -> None:
    """BadRequest naming the first agent whose command is not on ``path`` (the caller's
    ``PATH``): a run is refused before anything is created (issue 40)."""
    for agent in sorted(agents):
        command = AGENT_COMMANDS[agent][0]
        if which(command, path) is None:
            raise BadRequest(f"{agent}: {command!r} not found on PATH={path}")


def run_state(stored: str, variant_states: Sequence[str]) -> RunState:
    """A run as shown: ``failed`` while it is active but every variant failed for good
    (nothing of it runs, nothing will: issue 40), else the state it has stored."""
    if stored == "active" and variant_states and all(s == "failed" for s in variant_states):
        return "failed"
    return cast(RunState, stored)


class Step(Enum):
    CREATE_WORKTREE = "worktree"
    SPAWN_TERMINAL = "terminal"
    DELIVER_PROMPT = "prompt"
    WATCH = "watch"
    STOP = "stop"


class Variant(NamedTuple):
    variant: str
    agent: str
    ordinal: int


def parse_agents_spec(spec: str) -> list[AgentCount]:
    """``claude:2,codex:1`` (a count of 1 may be left out: ``claude,codex``)."""
    out: list[AgentCount] = []
    for part in spec.split(","):
        name, sep, count = part.strip().partition(":")
        if not name:
            raise BadRequest(f"--agents: empty agent name in {spec!r}")
        try:
            n = int(count) if sep else 1
        except ValueError:
            raise BadRequest(f"--agents: {count!r} is not a count (in {part!r})") from None
        out.append(AgentCount(agent=name, count=n))
    return out


def plan_variants(agents: Sequence[AgentCount]) -> list[Variant]:
    """One variant per agent instance: ``claude-1``, ``claude-2``, ``codex-1``."""
    counts: dict[str, int] = {}
    out: list[Variant] = []
    for entry in agents:
        if entry.agent not in AGENTS:
            raise BadRequest(f"unknown agent {entry.agent!r} (known: {', '.join(AGENTS)})")
        if entry.count < 1:
            raise BadRequest(f"{entry.agent}: the count must be at least 1")
        for _ in range(entry.count):
            counts[entry.agent] = counts.get(entry.agent, 0) + 1
            out.append(Variant(f"{entry.agent}-{counts[entry.agent]}", entry.agent, len(out)))
    if not out:
        raise BadRequest("a run needs at least one agent")
    if len(out) > MAX_VARIANTS:
        raise BadRequest(f"{len(out)} variants: at most {MAX_VARIANTS} in one run")
    return out


def slug(text: str) -> str:
    cut = _NAME_UNSAFE.sub("-", text).strip("-.")[:MAX_NAME_CHARS].strip("-.")
    return cut or "run"


def worktree_name(run_name: str, run_id: str, variant: str) -> str:
    """Unique per run and variant, so a retried create can only ever find its own."""
    base = slug(run_name)
    if run_id not in base:
        base = f"{base}-{run_id}"
    return f"{base}-{variant}"


def pane_key_for(run_id: str, variant: str, nonce: str) -> str:
    """The pane key the variant's terminal is spawned under (``<tabId>:<leafUUID>``),
    fixed before the spawn so the fence can find the terminal by it afterwards."""
    digest = hashlib.sha256(f"{run_id}/{variant}/{nonce}".encode()).hexdigest()
    leaf = f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"
    return f"orch-{run_id}:{leaf}"


def prompt_input(agent: str, prompt: str) -> tuple[str, str]:
    """What is typed: the prompt (pasted when it has several lines), then submit."""
    text = prompt.replace("\r\n", "\n")
    body = f"{PASTE_START}{text}{PASTE_END}" if "\n" in text else text
    return body, SUBMIT_KEYS.get(agent, "\r")


def next_step(phase: str, *, failed: bool, archived: bool, removed: bool) -> Step:
    if failed or removed:
        return Step.STOP
    if phase == "pending":
        return Step.CREATE_WORKTREE
    if phase == "worktree":
        return Step.SPAWN_TERMINAL
    if phase == "terminal":
        return Step.STOP if archived else Step.DELIVER_PROMPT
    return Step.STOP if archived else Step.WATCH


def is_ready(row: AgentStatusRow | None) -> bool:
    """The agent can take a prompt: hooks has a row for its pane saying it waits at its
    prompt (SessionStart → ``waiting``) or finished a turn (``done``)."""
    return row is not None and row.state in ("waiting", "done")


def prompt_taken(row: AgentStatusRow | None, since_ms: int) -> bool:
    """Evidence that a prompt typed at ``since_ms`` reached the agent: it reported a turn
    (working, blocked, done) that began at or after that moment."""
    return (
        row is not None
        and row.state in ("working", "blocked", "done")
        and row.state_since_ms >= since_ms
    )


def is_idle(row: AgentStatusRow | None) -> bool:
    return row is not None and row.state in ("waiting", "done")


def variant_state(
    phase: str,
    *,
    failed: bool,
    archived: bool,
    merged: bool,
    row: AgentStatusRow | None,
    running: bool | None,
    prompted_ms: int | None = None,
) -> VariantState:
    """What ``run.show`` says of a variant (module docstring). Once prompted, a row that
    went waiting/done before ``prompted_ms`` is the agent's state before the prompt (its
    ready), not the turn's end: the variant is working until hooks reports the turn."""
    if merged:
        return "merged"
    if archived:
        return "archived"
    if failed:
        return "failed"
    if phase in ("terminal", "prompted") and running is False:
        return "exited"
    if phase != "prompted":
        return "starting"
    if row is None:
        return "working"  # prompted; its first report is on its way
    if row.state == "blocked":
        return "needs-you"
    if row.state in ("waiting", "done"):
        stale = prompted_ms is not None and row.state_since_ms < prompted_ms
        return "working" if stale else "idle"
    return "working"


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def resolve_recipients(to: str, variants: Iterable[str], sender: str) -> list[str]:
    """``all`` is every variant but the sender; else the one named."""
    names = list(variants)
    if to == "all":
        return [v for v in names if v != sender]
    if to not in names:
        raise BadRequest(f"no variant {to!r} in this run (variants: {', '.join(names)})")
    return [to]


def tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


# -- run.merge ------------------------------------------------------------------------
def merge_replays(
    run_id: str, run_state: str, merged_variant: str, variant: str, worktree_id: str
) -> bool:
    """Whether ``run.merge`` of ``variant`` answers from the record: the run merged it
    already (a retry). ``Conflict`` if the run merged another variant, or if this one has
    no worktree to merge yet."""
    if run_state == "merged":
        if merged_variant != variant:
            raise Conflict(f"run {run_id} already merged {merged_variant}")
        return True
    if not worktree_id:
        raise Conflict(f"{variant} has no worktree yet")
    return False


def check_merge_preview(
    run_name: str,
    variant: str,
    worktree_path: str,
    *,
    into: str,
    conflicts: Sequence[str],
    uncommitted: int,
    dirty: bool,
    commit: bool,
) -> None:
    """``Conflict`` unless gitwatch's preview lets the merge go: no conflicting file, and
    no uncommitted change unless asked to commit them first (``--commit``)."""
    if conflicts:
        raise Conflict(f"merging {variant} into {into} conflicts in: " + ", ".join(conflicts))
    if dirty and not commit:
        raise Conflict(
            f"{variant} has {uncommitted} uncommitted change"
            f"{'s' if uncommitted != 1 else ''} in {worktree_path}: "
            f"`orca run merge {run_name} {variant} --commit` commits them first"
        )


def merge_messages(run_name: str, variant: str, agent: str) -> tuple[str, str]:
    """The merge commit's message, and that of the commit of uncommitted work first."""
    return (
        f"orca run {run_name}: {variant} ({agent})",
        f"orca run {run_name}: {variant}'s uncommitted work ({agent})\n",
    )
