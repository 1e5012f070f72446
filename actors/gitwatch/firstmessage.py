"""A worktree created with a placeholder name takes its name from the agent's first
message (seed 01 §4.3, upstream ``renameWorktreeFolderOnFirstWork``).

The worktree's meta carries ``pendingFirstAgentMessageRename`` from its create. The
first message that arrives for it (hooks sends the prompt of an agent's first turn)
names it: the first line, whitespace collapsed, cut to ``FIRST_MESSAGE_NAME_CHARS`` at
a word boundary, becomes the display name; its sanitized form the branch and folder.
Then the ordinary rename runs (branch + display name, then the folder, then the
identity migration and ``worktree.renamed``), writing the cleared flag with the display
name. Tried once: a rename that fails clears the flag and records
``firstAgentMessageRenameError``, so later prompts do not retry a broken rename.
"""

from __future__ import annotations

from actors.gitwatch import errors
from actors.gitwatch.lifecycle import rename_worktree
from actors.gitwatch.storeview import StorePort
from actors.gitwatch.tracker import Emit, RepoTracker
from orca.contracts import gitwatch as contract
from orca.model import naming
from orca.model.ids import parse_worktree_id
from orca.wire.errors import OrcaError

PENDING_FIRST_MESSAGE_RENAME = "pendingFirstAgentMessageRename"
_ERROR = "firstAgentMessageRenameError"


def name_from_message(message: str) -> str | None:
    """The display name a first message gives, or None when it has nothing usable."""
    line = next((text for text in message.splitlines() if text.strip()), "")
    words = line.split()
    name = ""
    for word in words:
        candidate = f"{name} {word}" if name else word
        if len(candidate) > contract.FIRST_MESSAGE_NAME_CHARS:
            break
        name = candidate
    if not name and words:
        name = words[0][: contract.FIRST_MESSAGE_NAME_CHARS]  # one very long word
    try:
        naming.sanitize_worktree_name(name)
    except naming.InvalidWorktreeName:
        return None
    return name


async def rename_from_first_message(
    tracker: RepoTracker, store: StorePort, emit: Emit, worktree_id: str, message: str
) -> contract.FirstMessageRename:
    try:
        parse_worktree_id(worktree_id)
    except ValueError as exc:
        raise errors.CallerError(str(exc)) from exc
    # A copy being reloaded could lack the pending flag: "no rename pending" would be
    # final for this worktree, so only a whole view answers.
    meta = (await store.whole_view()).meta.get(worktree_id)
    if meta is None or not meta.pending_first_agent_message_rename:
        return contract.FirstMessageRename(renamed=False, skipped="no rename pending")
    name = name_from_message(message)
    if name is None:
        return contract.FirstMessageRename(
            renamed=False, skipped="no usable name in message", still_pending=True
        )
    try:
        done = await rename_worktree(
            tracker, store, emit, worktree_id, name,
            meta_patch={PENDING_FIRST_MESSAGE_RENAME: False, _ERROR: None},
        )  # fmt: skip
    except (errors.MissingTarget, errors.PeerUnavailable):
        raise  # no such worktree, or it moved and store must catch up: the caller's to see
    except errors.GitwatchError as exc:
        try:
            await store.patch_meta(
                worktree_id, {PENDING_FIRST_MESSAGE_RENAME: False, _ERROR: str(exc)}
            )
        except OrcaError as store_exc:
            raise errors.PeerUnavailable(f"rename failed ({exc}); store: {store_exc}") from exc
        return contract.FirstMessageRename(renamed=False, skipped=f"rename failed: {exc}")
    return contract.FirstMessageRename(renamed=True, rename=done)
