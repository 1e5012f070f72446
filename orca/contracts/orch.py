"""The ``orch`` wire contract: one task to N agents, compared, the best one merged.

``orch`` (seed 02 §12-13, issue 26) is the single writer of the orchestration database
``data/orch/orch.sqlite3``: runs, tasks (one per *variant*: one agent in one worktree),
dispatches (the spawn commit fence), messages and their deliveries, mutation receipts,
inbox cursors and worker reports. Every transition is one SQLite transaction.

Ops (args → result; camelCase on the wire):

``run.create`` {repo, prompt, agents: [{agent, count}], base?, check?, name?, key?,
    userEnv?} → RunInfo. ``repo``: a repo's id, name or path (store ``repo.list``). One variant per
    agent instance (``claude-1``, ``claude-2``, ``codex-1``...), each given its own
    worktree (gitwatch ``worktree.create``, named ``<name>-<variant>``, based on
    ``base``) and its own agent terminal (ptyd ``term.spawn`` of the agent's command in
    that worktree); the prompt is typed into the terminal (``term.write``, bracketed
    paste + the agent's submit key) once the agent is ready: hooks reports a status row
    for its pane (SessionStart → ``waiting``), never a guess from the screen. The reply
    comes at once (variants ``starting``); ``run.changed`` tells of every step.
    ``check``: a shell command run in each variant's worktree whenever its agent goes
    idle after working (and on ``run.check``). ``key``: idempotency (the same key gives
    the same run). Agents: ``claude``, ``codex``, ``gemini``, at most MAX_VARIANTS in all.
    ``userEnv``: the asking shell's environment; every agent command is looked up on its
    ``PATH`` before anything is created, and the agents start in it (orch's own
    environment without it). Errors: ``bad_request`` (empty prompt, unknown agent, bad
    count, an agent's command not on ``PATH``), ``not_found`` (no such repo),
    ``unavailable`` (store down).
``run.list`` {} → RunList {runs: [RunSummary]} newest first.
``run.show`` {run} → RunInfo; per variant: id, agent, ``state`` (``starting`` until the
    prompt is delivered; then hooks' row: ``working``, ``needs-you`` (blocked),
    ``idle`` (waiting/done since the prompt; the ready from before it still reads
    ``working``); ``exited`` once its terminal ended; ``archived`` after another
    variant was merged; ``failed`` when a step failed for good, ``error`` says
    why), ``handle`` (the terminal's, as ``orca term ls`` prints it), ``worktreeId``,
    ``worktreePath``, ``branch``, ``diffstat`` and ``uncommitted`` (the working tree's
    changes, counted in ``diffstat`` too; gitwatch ``worktree.mergePreview``
    against the base; null while unknown), ``check`` (exit code + the output's tail),
    ``elapsedS`` (spawn to the last idle, or to now while working), ``tokens`` and
    ``costUsd`` (vault ``vault.usage`` by pane; null without the vault), ``report`` (the
    worker's last ``run.report``). ``run`` is a run id or a unique name.
``run.check`` {run, variant?} → RunInfo after running the check in every (or one)
    variant's worktree now. Errors: ``conflict`` (the run has no check command).
``run.merge`` {run, variant, mode: merge|squash|rebase, commit=false} → Merged {run,
    variant, commit, into, archived}. gitwatch ``worktree.mergePreview`` first: conflicts
    refuse the merge (``conflict``, the paths in the message), and so do uncommitted
    changes unless ``commit`` (then they are committed on the variant's branch first, a
    message naming the run and the variant); then ``worktree.merge`` into the run's base.
    Every other variant is archived (its worktree and terminal kept). Idempotent: a
    merged run answers its merge again for the same variant, ``conflict`` for another.
``run.remove`` {run, force=false} → Removed {run, removed: [variant], kept: [{variant,
    reason}]} removes the variant worktrees that have no live terminal (gitwatch
    ``worktree.remove``; a dirty one only with ``force``); the run is forgotten once
    every worktree is gone.
``run.send`` {run, to: variant | "all", from?, body, key?, caller?} → Receipt {key,
    messageId, seq, recipients, duplicate}. One message, one delivery per recipient; the
    same ``key`` again gives the same receipt (``duplicate`` true) and no new message.
    ``from``: a variant, or ``operator`` (default); a worker's ``caller`` names it.
``run.inbox`` {run?, variant?, after?, caller?} → Inbox {run, variant, cursor, messages}:
    the messages delivered to the variant with ``seq`` > ``after`` (default: its acked
    cursor). ``run.ack`` {run?, variant?, upto, caller?} → Acked {cursor} moves the
    cursor forward (never back).
``run.report`` {status: working|done|failed, summary, key?, caller} → Receipt: a
    worker's report, settled once per key; the latest shows in ``run.show``.

Worker capabilities: inside an agent's pane ``orca run inbox`` / ``orca run report``
pass ``caller`` {paneKey, launchToken} from the environment ptyd gave the pane
(``ORCA_PANE_KEY``, ``ORCA_AGENT_LAUNCH_TOKEN``); orch holds the token's sha256 from
``term.spawn`` and the agent session ids hooks bound to the pane, so a caller is its
variant however often its agent compacts or restarts its conversation. A caller that
matches no variant is refused (``bad_request``); ``run``/``variant`` given with ``caller`` must agree.

Automations (issue 38; docs/architecture.md "Automations"): an orchestration run on a
clock. orch owns the schedule; the definitions and the record of every firing live in
the store (``automations``, ``automationRuns``), written by orch only.

``auto.add`` {name, repo, prompt, agents, base?, check?, cron?, everySeconds?, tz="UTC",
    overlap=false} → AutomationInfo. Exactly one of ``cron`` (five fields, read in
    ``tz``) and ``everySeconds``. ``repo`` as for ``run.create``. Errors:
    ``bad_request`` (schedule, zone, agents, empty prompt or name), ``not_found`` (repo),
    ``conflict`` (the name is taken), ``unavailable`` (store down).
``auto.list`` {} → AutoList {automations: [AutomationInfo]} (``runs`` empty; ``lastRun``).
``auto.show`` {automation} → AutomationInfo with ``runs``, newest first, and
    ``runSummaries``: the orchestration runs they started that orch still has (as
    ``run.list`` gives them). ``automation``: an id or a name.
``auto.remove`` {automation} → AutoRemoved {id}: the definition and its records.
``auto.pause`` / ``auto.resume`` {automation} → AutomationInfo. Resume counts due times
    from then on: the times it was paused for are not caught up.
``auto.runNow`` {automation} → AutomationRun: one firing now (trigger ``manual``),
    through the same fence and overlap rule as a scheduled one.
A firing starts its run through ``run.create`` (key ``auto:<automationRunId>``) in orch's
own environment; ``status`` ``failed`` with ``error`` when it could not start (an agent's
command missing, the repo gone), ``skipped`` when the previous firing's run still works
and the automation has no ``overlap``.

Events: ``run.changed`` {run, revision} after every committed transition of a run;
``auto.changed`` {id} after a definition changed; ``auto.fired`` {name, run} once a
firing is settled (started, skipped or failed: ``orca watch`` says when one failed).

Errors: ``bad_request``, ``not_found`` (no such run or variant), ``conflict``,
``unavailable`` (a peer is down). A caller that is no variant is ``bad_request``
(:class:`UnknownCaller`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from orca.contracts.base import Args, Contract, NoArgs, Payload
from orca.model.automations import Automation, AutomationRun
from orca.user_env import check_bounds
from orca.wire.errors import BadRequest, Conflict, NotFound, Unavailable

AGENTS: tuple[str, ...] = ("claude", "codex", "gemini")
MergeMode = Literal["merge", "squash", "rebase"]
ReportStatus = Literal["working", "done", "failed"]
VariantState = Literal[
    "starting", "working", "needs-you", "idle", "exited", "archived", "failed", "merged"
]
# ``failed``: active, but every variant failed for good (shown, never stored).
RunState = Literal["active", "merged", "removed", "failed"]
# 100 variants is the benchmark's run (bench/orch.py); one run beyond a few hundred
# agents is a typo, not a plan.
MAX_VARIANTS = 256
MAX_PROMPT_CHARS = 100_000
MAX_MESSAGE_CHARS = 64_000
MAX_KEY_CHARS = 128
# The check's output kept: the end of it, where the failures are.
CHECK_TAIL_CHARS = 4_000
OPERATOR = "operator"
ALL = "all"


class UnknownCaller(BadRequest):
    """A worker's pane key and launch token match no variant (travels as bad_request)."""


_Key = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_KEY_CHARS)]


class AgentCount(Payload, frozen=True, kw_only=True):
    agent: str
    count: Annotated[int, msgspec.Meta(ge=1, le=MAX_VARIANTS)] = 1


class Caller(Payload, frozen=True, kw_only=True):
    """A worker naming itself from its pane's environment."""

    pane_key: str
    launch_token: Annotated[str, msgspec.Meta(max_length=256)]


class CreateArgs(Args, frozen=True, kw_only=True):
    repo: str
    prompt: Annotated[str, msgspec.Meta(max_length=MAX_PROMPT_CHARS)]
    agents: Annotated[list[AgentCount], msgspec.Meta(min_length=1, max_length=16)]
    base: str | None = None
    check: Annotated[str, msgspec.Meta(max_length=4096)] | None = None
    name: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    key: _Key | None = None
    # The asking shell's environment: the agents start in it, their commands are
    # looked up on its PATH (issue 40); without it, orch's own.
    user_env: dict[str, str] | None = None

    def __post_init__(self) -> None:  # a ValueError is msgspec's ValidationError
        if self.user_env is not None:
            check_bounds(self.user_env)


class RunArgs(Args, frozen=True, kw_only=True):
    run: str


class CheckArgs(Args, frozen=True, kw_only=True):
    run: str
    variant: str | None = None


class MergeArgs(Args, frozen=True, kw_only=True):
    run: str
    variant: str
    mode: MergeMode = "merge"
    # Commit the variant's uncommitted changes on its branch first (else they refuse).
    commit: bool = False


class RemoveArgs(Args, frozen=True, kw_only=True):
    run: str
    force: bool = False


class SendArgs(Args, frozen=True, kw_only=True):
    run: str
    to: str
    body: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_MESSAGE_CHARS)]
    sender: str | None = msgspec.field(default=None, name="from")
    key: _Key | None = None
    caller: Caller | None = None


class InboxArgs(Args, frozen=True, kw_only=True):
    run: str | None = None
    variant: str | None = None
    after: Annotated[int, msgspec.Meta(ge=0)] | None = None
    caller: Caller | None = None


class AckArgs(Args, frozen=True, kw_only=True):
    upto: Annotated[int, msgspec.Meta(ge=0)]
    run: str | None = None
    variant: str | None = None
    caller: Caller | None = None


class ReportArgs(Args, frozen=True, kw_only=True):
    status: ReportStatus
    summary: Annotated[str, msgspec.Meta(max_length=MAX_MESSAGE_CHARS)] = ""
    key: _Key | None = None
    caller: Caller


# -- results -----------------------------------------------------------------------------


class Diffstat(Payload, frozen=True, kw_only=True):
    files: int
    insertions: int
    deletions: int


class CheckResult(Payload, frozen=True, kw_only=True):
    exit_code: int
    tail: str
    ran_at_ms: int
    duration_ms: int


class VariantInfo(Payload, frozen=True, kw_only=True):
    variant: str
    agent: str
    state: VariantState
    phase: str  # the spawn step reached: pending, worktree, terminal, prompted
    handle: str = ""
    session_id: str = ""
    pane_key: str = ""
    worktree_id: str = ""
    worktree_path: str = ""
    branch: str = ""
    diffstat: Diffstat | None = None
    # What of ``diffstat`` is not committed yet (agents such as Claude Code leave their
    # edits uncommitted; ``run merge --commit`` commits them first).
    uncommitted: Diffstat | None = None
    conflicts: list[str] | None = None
    check: CheckResult | None = None
    elapsed_s: float | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    report: str = ""
    report_status: str = ""
    error: str = ""
    prompted_at_ms: int | None = None


class RunInfo(Payload, frozen=True, kw_only=True):
    run: str
    name: str
    repo_id: str
    repo: str
    prompt: str
    base: str
    check: str
    state: RunState
    created_at_ms: int
    revision: int
    merged_variant: str = ""
    merge_commit: str = ""
    variants: list[VariantInfo]


class RunSummary(Payload, frozen=True, kw_only=True):
    run: str
    name: str
    repo: str
    state: RunState
    created_at_ms: int
    revision: int
    variants: int
    states: dict[str, int]
    merged_variant: str = ""


class RunList(Payload, frozen=True, kw_only=True):
    runs: list[RunSummary]


class Merged(Payload, frozen=True, kw_only=True):
    run: str
    variant: str
    commit: str
    into: str
    archived: list[str]


class KeptVariant(Payload, frozen=True, kw_only=True):
    variant: str
    reason: str


class Removed(Payload, frozen=True, kw_only=True):
    run: str
    removed: list[str]
    kept: list[KeptVariant]


class Receipt(Payload, frozen=True, kw_only=True):
    key: str
    message_id: str
    seq: int
    recipients: list[str]
    duplicate: bool = False


class Message(Payload, frozen=True, kw_only=True):
    seq: int
    message_id: str
    sender: str = msgspec.field(name="from")
    to: str
    body: str
    created_at_ms: int


class Inbox(Payload, frozen=True, kw_only=True):
    run: str
    variant: str
    cursor: int
    messages: list[Message]


class Acked(Payload, frozen=True, kw_only=True):
    cursor: int


class RunChanged(Payload, frozen=True, kw_only=True):
    run: str
    revision: int


# -- automations --------------------------------------------------------------------------


class AutoAddArgs(Args, frozen=True, kw_only=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    repo: str
    prompt: Annotated[str, msgspec.Meta(max_length=MAX_PROMPT_CHARS)]
    agents: Annotated[list[AgentCount], msgspec.Meta(min_length=1, max_length=16)]
    base: str | None = None
    check: Annotated[str, msgspec.Meta(max_length=4096)] | None = None
    cron: Annotated[str, msgspec.Meta(max_length=256)] | None = None
    every_seconds: int | None = None
    tz: Annotated[str, msgspec.Meta(max_length=64)] = "UTC"
    overlap: bool = False


class AutoArgs(Args, frozen=True, kw_only=True):
    automation: str  # an id or a name


class AutomationInfo(Payload, frozen=True, kw_only=True):
    automation: Automation
    next_due_ms: int | None = None  # None: paused
    last_run: AutomationRun | None = None
    runs: list[AutomationRun] = msgspec.field(default_factory=list)
    # auto.show: the runs its firings started, as run.list shows them (their variants'
    # states); `orca run show RUN` has each one's checks, diffstat and cost.
    run_summaries: list[RunSummary] = msgspec.field(default_factory=list)


class AutoList(Payload, frozen=True, kw_only=True):
    automations: list[AutomationInfo]


class AutoRemoved(Payload, frozen=True, kw_only=True):
    id: str


class AutoChanged(Payload, frozen=True, kw_only=True):
    id: str


class AutoFired(Payload, frozen=True, kw_only=True):
    name: str
    run: AutomationRun


CONTRACT = Contract("orch")
CREATE = CONTRACT.op(
    "run.create", CreateArgs, RunInfo, BadRequest, NotFound, Unavailable,
    doc="one worktree and one agent per variant, the prompt delivered once ready",
)  # fmt: skip
LIST = CONTRACT.op("run.list", NoArgs, RunList, doc="every run, newest first")
SHOW = CONTRACT.op("run.show", RunArgs, RunInfo, NotFound, doc="one run, variant by variant")
CHECK = CONTRACT.op(
    "run.check", CheckArgs, RunInfo, NotFound, Conflict, doc="run the check command now"
)
MERGE = CONTRACT.op(
    "run.merge", MergeArgs, Merged, BadRequest, NotFound, Conflict, Unavailable,
    doc="merge one variant (conflicts previewed first); the others archived",
)  # fmt: skip
REMOVE = CONTRACT.op(
    "run.remove", RemoveArgs, Removed, NotFound, Unavailable,
    doc="remove the run's worktrees that no terminal lives in",
)  # fmt: skip
SEND = CONTRACT.op(
    "run.send", SendArgs, Receipt, BadRequest, NotFound,
    doc="a message to one variant or all; idempotent by key",
)  # fmt: skip
INBOX = CONTRACT.op(
    "run.inbox", InboxArgs, Inbox, BadRequest, NotFound,
    doc="a variant's messages after its cursor",
)  # fmt: skip
ACK = CONTRACT.op("run.ack", AckArgs, Acked, BadRequest, NotFound, doc="move a variant's cursor")
REPORT = CONTRACT.op(
    "run.report", ReportArgs, Receipt, BadRequest, doc="a worker's report, settled once"
)
CHANGED = CONTRACT.event("run.changed", RunChanged, doc="a run's state changed")
AUTO_ADD = CONTRACT.op(
    "auto.add", AutoAddArgs, AutomationInfo, BadRequest, NotFound, Conflict, Unavailable,
    doc="an orchestration run on a schedule",
)  # fmt: skip
AUTO_LIST = CONTRACT.op("auto.list", NoArgs, AutoList, Unavailable, doc="every automation")
AUTO_SHOW = CONTRACT.op(
    "auto.show", AutoArgs, AutomationInfo, NotFound, doc="one automation and its firings"
)
AUTO_REMOVE = CONTRACT.op(
    "auto.remove", AutoArgs, AutoRemoved, NotFound, Unavailable, doc="forget an automation"
)
AUTO_PAUSE = CONTRACT.op(
    "auto.pause", AutoArgs, AutomationInfo, NotFound, Unavailable, doc="stop firing"
)
AUTO_RESUME = CONTRACT.op(
    "auto.resume", AutoArgs, AutomationInfo, NotFound, Unavailable, doc="fire again, from now"
)
AUTO_RUN_NOW = CONTRACT.op(
    "auto.runNow", AutoArgs, AutomationRun, NotFound, Unavailable, doc="one firing now"
)
AUTO_CHANGED = CONTRACT.event("auto.changed", AutoChanged, doc="a definition changed")
AUTO_FIRED = CONTRACT.event("auto.fired", AutoFired, doc="a firing settled")
