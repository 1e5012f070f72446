"""The ``gitwatch`` actor's wire contract: every op and event, with fields and errors.

gitwatch owns git facts (worktree list, HEAD, branch, dirty counts) and git mutations
(worktree add/remove/move, merging a worktree's branch). It never writes ``orca-data.json``: repos, settings and
worktreeMeta come from a mirror of ``store`` (a repo the mirror has not seen yet is
looked up with ``repo.list``); meta is changed through store ops (``worktreeMeta.set``
on create, ``worktreeMeta.remove`` on remove, ``worktree.migrate_identity`` on
rename). Field names are camelCase.

Errors: ``bad_request`` (invalid name or id, path outside the workspace root, folder
repo, unknown base ref, main worktree), ``not_found`` (no such repo or
worktree), ``conflict`` (branch checked out elsewhere, dirty or locked worktree,
destination exists, no workspace root configured), ``unavailable`` (repo directory
gone, store unreachable, not loaded yet or catching up after a restart), ``internal`` (git failed for another
reason; the message carries git's stderr).

Ops (args → result)
-------------------
worktree.list     {repoId?} → {worktrees: [WorktreeRow], unavailableRepos: [{repoId, path, reason}],
                  unrepresentable: [{repoId, path, reason}]}
                  WorktreeRow = DetectedWorktree (id, repoId, displayName, path, head,
                  branch, isBare, isMainWorktree, locked, lockReason, prunable,
                  prunableReason, ownership, selectedCheckout, visible, meta fields...)
                  + isDetached + gitStatus {staged, unstaged, untracked, conflicted,
                  total} | null (not computed yet) + aheadBehind {ahead, behind,
                  against} | null (no comparison ref; see AheadBehind). Every field is written out, defaults
                  too (rows are read by people and scripts); unknown meta fields ride
                  along as extra keys. not_found: unknown repoId. Retries unavailable
                  repos first. Rows: main worktree first, then by path. Served from memory.
                  ``unrepresentable``: worktrees git lists whose path cannot be an id
                  (not UTF-8, a NUL byte): never rows or events, only reported here
                  with the path's undecodable bytes shown as ``\\xNN`` (issue 16).
                  Text fields (branch, lock/prune reasons) carry such bytes as ``\\xNN``.
worktree.create   {repoId, name, base?, setup?: "run"|"skip" (default run), requestId?,
                  source? (default "rpc"), pendingFirstAgentMessageRename?: false,
                  carryFrom?: PATH} → {worktreeId, path, branch, setup: {ran,
                  exitCode, error?}}
                  progress: worktree.create.progress events tagged with requestId.
                  carryFrom (a fork): branched from that worktree's HEAD, with its
                  uncommitted work (changes, new files, deletions) as uncommitted
                  work; the source is left untouched (its index too).
                  The meta becomes the creation evidence (instanceId, createdAt,
                  orcaCreatedAt, orcaCreationSource, orcaCreationWorkspaceLayout,
                  baseRef when a branch was made, pendingFirstAgentMessageRename when
                  asked: ``name`` is a placeholder the first agent message replaces,
                  see worktree.renameFromFirstMessage). A failing setup script is reported
                  in setup.exitCode, one that cannot run in setup.error; the worktree
                  is kept either way. ``branch`` is the full ref (refs/heads/<name>).
worktree.remove   {worktreeId, force?: false, deleteBranch?: false}
                  → {worktreeId, removed, branchDeleted, branchError?}
                  conflict: dirty or locked (unless force). The branch stays unless
                  deleteBranch (an unmerged one only with force). Meta is dropped.
worktree.rename   {worktreeId, newName, displayName?, renameBranch?: true}
                  → {oldWorktreeId, newWorktreeId, path, branch, displayName}
                  Seed 01 §4.3, all together: the local branch checked out there is
                  renamed to the sanitized newName (unless renameBranch is false or
                  HEAD is detached), the meta's displayName becomes displayName
                  (default: newName as typed), then git worktree move → store
                  worktree.migrate_identity → worktree.renamed, nothing in between.
                  The folder stays in its parent directory. A step that fails before
                  the move undoes the earlier ones (nothing changed). conflict:
                  destination exists, branch name taken, locked. unavailable: moved
                  but store did not migrate (the event still goes out, with
                  identityMigrated false). ptyd follows worktree.renamed (store's).
worktree.renameFromFirstMessage {worktreeId, message}
                  → {renamed, skipped?, rename?: <worktree.rename result>, stillPending?}
                  Seed 01's pendingFirstAgentMessageRename: a worktree created with
                  pendingFirstAgentMessageRename (a placeholder name) is renamed once,
                  by the first agent message: displayName = the message's first line
                  (whitespace collapsed, at most FIRST_MESSAGE_NAME_CHARS characters,
                  cut at a word), branch and folder = its sanitized form. The flag is
                  cleared with the rename; a rename that fails records
                  firstAgentMessageRenameError and clears the flag (tried once).
                  Not pending, or a message with no usable name: renamed false and
                  ``skipped`` says why (hooks may send every prompt; only the first
                  acts); stillPending: the flag is still set (no usable name), so a
                  later message may name it. worktree.rename (the user's) clears the
                  flag: a name the user chose is never replaced. bad_request: bad id;
                  not_found: unknown worktree.
                  Hooks calls it (actors/hooks/first_prompt.py) on a user prompt with
                  text (Claude's and Codex's UserPromptSubmit, Gemini's BeforeAgent,
                  Cursor's beforeSubmitPrompt) that the pane's authority accepted, for
                  the row's worktree: once per worktree per hooks incarnation unless
                  the answer is stillPending or the call failed, in the background.
worktree.mergePreview {worktree, into?, mode?: "merge"|"squash"|"rebase" (default merge)}
                  → MergePreview {into, branch, mode, ahead, behind, diffstat {files,
                  insertions, deletions}, conflicts: [path], dirty, uncommitted: [line]}
                  What merging the worktree's branch into ``into`` would do, computed in
                  memory (libgit2 merge of the two commits, or for rebase each commit
                  replayed in turn): no working tree, index or ref is touched. ``worktree``
                  is a worktree id (or its path). ``into`` (a local branch, short or
                  full name; ``origin/main`` means ``main``) defaults to the worktree's base (the ``baseRef`` recorded
                  at create, then the repo's ``worktreeBaseRef``, as a local branch),
                  else the repo's default branch (``origin/HEAD``'s name, ``main``,
                  ``master``); it is returned as a short name. ``ahead``: commits the
                  branch has that ``into`` lacks; ``behind``: the reverse. ``diffstat``:
                  what the branch changed since the merge base. ``conflicts``: paths the
                  merge (or the first replayed commit that conflicts) cannot resolve.
                  ``dirty``: the worktree has uncommitted changes (``uncommitted``: git
                  status lines, at most MERGE_LISTED_CHANGES). ``checkout``: the path
                  where ``into`` is checked out ("" if nowhere), ``checkoutDirty``: it
                  has uncommitted changes to tracked files (the merge would be refused).
                  bad_request: bad id, mode or branch name, ``into`` is the worktree's
                  own branch, the main worktree, a detached HEAD; not_found: unknown
                  worktree or ``into`` branch; conflict: no shared history, a repo
                  libgit2 cannot read (SHA-256).
worktree.merge    {worktree, into?, mode?, message?, commitFirst?: false, commitMessage?}
                  → MergeResult {into, commit, mode, previous, changed, checkoutUpdated,
                  committed}
                  Merges the branch into ``into``: ``merge`` a merge commit (always, even
                  when a fast-forward would do), ``squash`` one commit with the branch's
                  whole change on ``into``, ``rebase`` the branch's commits replayed
                  onto ``into`` (merge commits dropped, commits that become empty
                  skipped; the worktree's branch and files move to the rebased tip),
                  then ``into`` fast-forwarded to it. The commits are made in memory,
                  then each ref moves by one compare-and-swap (``git update-ref NEW
                  OLD``), so a crash leaves every ref either old or new. Where ``into``
                  is checked out (the main checkout, usually) and that checkout is
                  clean, it is fast-forwarded (``git merge --ff-only``); untracked files
                  do not count unless git would overwrite one. Nothing to merge (the
                  branch already in ``into``, or a squash that changes nothing):
                  ``changed`` false, ``commit`` is ``into``'s tip. ``previous``:
                  ``into``'s tip before. conflict: the merge conflicts (paths listed),
                  the worktree is dirty (its changes listed: commit them first), the
                  checkout of ``into`` is dirty, a ref moved meanwhile. Errors as
                  mergePreview otherwise. ``commitFirst``: the worktree's uncommitted
                  changes (untracked files too, ignored ones not) are committed on its
                  branch first (``git add -A`` + ``git commit``, its hooks run;
                  ``commitMessage`` or a default), then merged; ``committed`` is that
                  commit ("" when there was nothing to commit). An agent that never
                  commits leaves its work uncommitted: this is how it is merged.
gitwatch.snapshot {} → {epoch, seq, repos: {repoId: {path, kind, unavailable,
                  worktrees: {path: {git, gitStatus}}, unrepresentable: [...]}}, watches,
                  degraded: [path]}
sys.stats         built in, plus {gitwatch: {repos, watches, degraded, unrepresentable}}
                  (``unrepresentable``: how many worktrees are withheld, see above).

Events (type → data); every envelope carries epoch + seq
-------------------------------------------------------
worktree.added    {repoId, worktreeId, git}             git = GitWorktreeInfo + isDetached
                                                        + aheadBehind
worktree.changed  {repoId, worktreeId, git, gitStatus}  HEAD/branch/lock, dirty counts or
                  git.aheadBehind (recomputed on every listing rescan: HEAD, refs/heads,
                  refs/remotes, packed-refs or config changed; no polling)
worktree.removed  {repoId, worktreeId, path}            also when store drops the repo
worktree.renamed  {repoId, oldWorktreeId, newWorktreeId, oldPath, newPath, identityMigrated}
repo.unavailable  {repoId, path, reason}                once per outage
worktree.create.progress {requestId, repoId, stage: git|setup|done, text}
                  on topic "worktree.create.progress:<requestId>" (subscribe to one
                  create with :func:`progress_topic`); "done" is the last one of a
                  create that succeeded (a failed create sends none).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from orca.contracts.base import Args, NoArgs, Payload
from orca.contracts.gitwatch_core import CONTRACT as CONTRACT  # every op below is on it
from orca.contracts.gitwatch_core import WORKTREE_PATHS as WORKTREE_PATHS
from orca.contracts.gitwatch_core import WorktreePath as WorktreePath
from orca.contracts.gitwatch_core import WorktreePaths as WorktreePaths
from orca.model.worktree import DetectedWorktree, GitWorktreeInfo
from orca.wire.errors import BadRequest, Conflict, Internal, NotFound, Unavailable

RepoKind = Literal["git", "folder"]
Stage = Literal["git", "setup", "done"]

# -- shared shapes ---------------------------------------------------------------------


class GitStatus(Payload, frozen=True, kw_only=True):
    """A worktree's dirty counts (ignored files never count)."""

    staged: int
    unstaged: int
    untracked: int
    conflicted: int
    total: int


class AheadBehind(Payload, frozen=True, kw_only=True):
    """How many commits a worktree's HEAD has that ``against`` lacks (``ahead``) and the
    other way round (``behind``). ``against`` is the comparison ref's short name
    (``origin/feature``, ``main``): the branch's configured upstream when it has one, else
    the worktree's base (the ``baseRef`` recorded at ``worktree.create``, then the repo's
    ``worktreeBaseRef``), else the repo's default branch (``origin/HEAD``'s target, a local
    ``main``, ``master``). Never the worktree's own branch."""

    ahead: int
    behind: int
    against: str


class WorktreeGit(GitWorktreeInfo, frozen=True, kw_only=True, omit_defaults=False):
    """A worktree's git facts: the model's ``GitWorktreeInfo``, every field written out,
    plus ``isDetached`` (HEAD is not on a branch) and ``aheadBehind`` (None when there is
    no comparison ref, HEAD is unborn, or the counts are not known; absent in old rows)."""

    is_detached: bool = False
    ahead_behind: AheadBehind | None = None


class WorktreeRow(DetectedWorktree, frozen=True, kw_only=True, omit_defaults=False):
    """One ``worktree.list`` row. A model record (unknown fields survive through
    ``orca.model.codec``) that writes its defaults out: encode it with
    ``orca.model.codec.to_builtins``, which also merges the unknown fields back."""

    is_detached: bool = False
    git_status: GitStatus | None = None
    ahead_behind: AheadBehind | None = None  # see AheadBehind; absent in old rows


# -- op args and results ---------------------------------------------------------------


class ListArgs(Args, frozen=True, kw_only=True):
    repo_id: str | None = None


class UnavailableRepo(Payload, frozen=True, kw_only=True):
    repo_id: str
    path: str
    reason: str


class UnrepresentableWorktree(Payload, frozen=True, kw_only=True):
    """A worktree git lists whose path cannot cross the wire (so it has no id): reported,
    never fatal. ``path`` shows its undecodable bytes as ``\\xNN``."""

    repo_id: str
    path: str
    reason: str


class WorktreeList(Payload, frozen=True, kw_only=True):
    worktrees: list[WorktreeRow]
    unavailable_repos: list[UnavailableRepo]
    unrepresentable: list[UnrepresentableWorktree] = msgspec.field(default_factory=list)


class CreateArgs(Args, frozen=True, kw_only=True):
    repo_id: str
    name: str
    base: str | None = None
    setup: Literal["run", "skip"] = "run"
    request_id: str | None = None
    source: str = "rpc"  # recorded as the meta's orcaCreationSource
    pending_first_agent_message_rename: bool = False  # name is a placeholder
    # Fork (issue 34): the path of a worktree of the same repo; the new one is branched
    # from its HEAD and starts with its uncommitted work, the source left untouched.
    carry_from: str | None = None


class SetupOutcome(Payload, frozen=True, kw_only=True, omit_defaults=True):
    """``ran``: the script started; ``exitCode``: its exit (None when none ran);
    ``error`` (absent unless set): why it could not run."""

    ran: bool
    exit_code: int | None
    error: str | None = None


class Created(Payload, frozen=True, kw_only=True):
    worktree_id: str
    path: str
    branch: str
    setup: SetupOutcome


class RemoveArgs(Args, frozen=True, kw_only=True):
    worktree_id: str
    force: bool = False
    delete_branch: bool = False


class Removed(Payload, frozen=True, kw_only=True, omit_defaults=True):
    """``branchError`` is absent unless deleting the branch was asked for and failed."""

    worktree_id: str
    removed: bool
    branch_deleted: bool
    branch_error: str | None = None


class RenameArgs(Args, frozen=True, kw_only=True):
    worktree_id: str
    new_name: str
    display_name: str | None = None  # default: new_name as typed
    rename_branch: bool = True


class Renamed(Payload, frozen=True, kw_only=True):
    old_worktree_id: str
    new_worktree_id: str
    path: str
    branch: str = ""  # full ref after the rename; "" when detached
    display_name: str = ""


# The first line of an agent's first message names the worktree; names longer than this
# read badly in a table and a branch list (cut at a word boundary when there is one).
FIRST_MESSAGE_NAME_CHARS = 40


class FirstMessageArgs(Args, frozen=True, kw_only=True):
    worktree_id: str
    message: str


class FirstMessageRename(Payload, frozen=True, kw_only=True, omit_defaults=True):
    """``renamed``: the worktree took its name from the message; else ``skipped`` says
    why (not pending, nothing usable in the message, the rename failed).
    ``stillPending``: the flag is still set (the message gave no name): a later message
    may name it; otherwise no later message will."""

    renamed: bool
    skipped: str | None = None
    rename: Renamed | None = None
    still_pending: bool = False


MergeMode = Literal["merge", "squash", "rebase"]
# How many uncommitted changes a preview or a refusal lists before "... and N more".
MERGE_LISTED_CHANGES = 20


class MergePreviewArgs(Args, frozen=True, kw_only=True):
    worktree: str  # a worktree id, or the worktree's path
    into: str | None = None  # a local branch; default: the worktree's base branch
    mode: MergeMode = "merge"


class MergeArgs(Args, frozen=True, kw_only=True):
    worktree: str
    into: str | None = None
    mode: MergeMode = "merge"
    message: str | None = None  # the merge or squash commit's message (a default is made)
    commit_first: bool = False  # commit the worktree's uncommitted changes, then merge
    commit_message: str | None = None


class Diffstat(Payload, frozen=True, kw_only=True):
    files: int
    insertions: int
    deletions: int


class MergePreview(Payload, frozen=True, kw_only=True):
    """What ``worktree.merge`` with the same args would do (nothing was changed)."""

    into: str  # short branch name
    branch: str  # the worktree's branch, short name
    mode: MergeMode
    ahead: int
    behind: int
    diffstat: Diffstat
    conflicts: list[str]
    dirty: bool
    uncommitted: list[str] = msgspec.field(default_factory=list)
    checkout: str = ""  # where ``into`` is checked out ("" if nowhere)
    checkout_dirty: bool = False  # that checkout has uncommitted tracked changes
    # The worktree's uncommitted changes (tracked vs HEAD, and untracked files), which
    # ``diffstat`` (the branch's commits) does not count; ``commit_first`` merges them.
    uncommitted_diffstat: Diffstat | None = None


class MergeResult(Payload, frozen=True, kw_only=True):
    into: str  # short branch name
    commit: str  # into's tip now (hex)
    mode: MergeMode
    previous: str = ""  # into's tip before (hex)
    changed: bool = True  # False: nothing to merge, no ref moved
    checkout_updated: bool = False  # a checkout of ``into`` was fast-forwarded
    committed: str = ""  # commitFirst's commit of the uncommitted changes ("" if none)


class WorktreeSnapshot(Payload, frozen=True, kw_only=True):
    git: WorktreeGit
    git_status: GitStatus | None


class RepoSnapshot(Payload, frozen=True, kw_only=True):
    path: str
    kind: RepoKind
    unavailable: str | None  # the reason, while the repo cannot be read
    worktrees: dict[str, WorktreeSnapshot]  # by path
    unrepresentable: list[UnrepresentableWorktree] = msgspec.field(default_factory=list)


class GitwatchSnapshot(Payload, frozen=True, kw_only=True):
    epoch: str
    seq: int
    repos: dict[str, RepoSnapshot]
    watches: int
    degraded: list[str]


# -- events ----------------------------------------------------------------------------


class WorktreeAdded(Payload, frozen=True, kw_only=True):
    repo_id: str
    worktree_id: str
    git: WorktreeGit


class WorktreeChanged(Payload, frozen=True, kw_only=True):
    repo_id: str
    worktree_id: str
    git: WorktreeGit
    git_status: GitStatus | None


class WorktreeRemoved(Payload, frozen=True, kw_only=True):
    repo_id: str
    worktree_id: str
    path: str


class WorktreeRenamed(Payload, frozen=True, kw_only=True):
    repo_id: str
    old_worktree_id: str
    new_worktree_id: str
    old_path: str
    new_path: str
    identity_migrated: bool


class RepoUnavailable(Payload, frozen=True, kw_only=True):
    repo_id: str
    path: str
    reason: str


class CreateProgress(Payload, frozen=True, kw_only=True):
    request_id: str | None
    repo_id: str
    stage: Stage
    text: str


def progress_topic(request_id: str | None) -> str:
    """The topic of one create's progress (``worktree.create.progress:<requestId>``), so a
    CLI subscribes to just that create."""
    return f"{CREATE_PROGRESS.type}:{request_id or ''}"


# -- the contract ----------------------------------------------------------------------

_MUTATION_ERRORS = (BadRequest, NotFound, Conflict, Unavailable, Internal)

# CONTRACT is made in gitwatch_core with the op `orca term ls` asks on every run.
WORKTREE_LIST = CONTRACT.op(
    "worktree.list", ListArgs, WorktreeList, NotFound, Unavailable, Internal,
    doc="Every tracked repo's rows (or one repo's), merged with store's meta.",
)  # fmt: skip
WORKTREE_CREATE = CONTRACT.op(
    "worktree.create", CreateArgs, Created, *_MUTATION_ERRORS,
    doc="git worktree add under the workspace root, creation evidence as meta, setup. "
    "Creates run side by side (two of one name in turn); a setup holds no other op.",
)  # fmt: skip
WORKTREE_REMOVE = CONTRACT.op(
    "worktree.remove", RemoveArgs, Removed, *_MUTATION_ERRORS,
    doc="git worktree remove (refuses dirty/locked unless forced); drops the meta.",
)  # fmt: skip
WORKTREE_RENAME = CONTRACT.op(
    "worktree.rename", RenameArgs, Renamed, *_MUTATION_ERRORS,
    doc="git worktree move in the same parent, then store migrates the identity.",
)  # fmt: skip
WORKTREE_RENAME_FROM_FIRST_MESSAGE = CONTRACT.op(
    "worktree.renameFromFirstMessage", FirstMessageArgs, FirstMessageRename,
    BadRequest, NotFound, Unavailable,
    doc="A placeholder-named worktree takes its name from the first agent message.",
)  # fmt: skip
WORKTREE_MERGE_PREVIEW = CONTRACT.op(
    "worktree.mergePreview", MergePreviewArgs, MergePreview, BadRequest, NotFound, Unavailable,
    Internal,
    doc="What merging a worktree's branch would do (conflicts, diffstat), nothing changed.",
)  # fmt: skip
WORKTREE_MERGE = CONTRACT.op(
    "worktree.merge", MergeArgs, MergeResult, *_MUTATION_ERRORS,
    doc="Merge, squash or rebase a worktree's branch into a branch; refs move atomically.",
)  # fmt: skip
SNAPSHOT = CONTRACT.op(
    "gitwatch.snapshot", NoArgs, GitwatchSnapshot,
    doc="Everything gitwatch believes, with the publisher's epoch and seq.",
)  # fmt: skip

WORKTREE_ADDED = CONTRACT.event("worktree.added", WorktreeAdded, doc="a worktree appeared")
WORKTREE_CHANGED = CONTRACT.event(
    "worktree.changed", WorktreeChanged, doc="HEAD, branch, lock or dirty counts changed"
)
WORKTREE_REMOVED = CONTRACT.event(
    "worktree.removed", WorktreeRemoved, doc="a worktree is gone (or its repo left the store)"
)
WORKTREE_RENAMED = CONTRACT.event(
    "worktree.renamed", WorktreeRenamed, doc="worktree.rename moved a worktree"
)
REPO_UNAVAILABLE = CONTRACT.event(
    "repo.unavailable", RepoUnavailable, doc="a repo cannot be read (once per outage)"
)
CREATE_PROGRESS = CONTRACT.event(
    "worktree.create.progress",
    CreateProgress,
    doc="one step of a worktree.create, on that create's own topic",
    topic_of=lambda event: progress_topic(event.request_id),
)
