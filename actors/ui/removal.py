"""What ``orca ui`` says before it removes a worktree (pure): the CLI's rules, shown.

``orca worktree rm`` refuses a dirty worktree and one with running terminals unless
``--force``. The UI asks instead of refusing, but never more cheaply than the CLI:

* clean, nothing running: one question, and the removal is not forced (gitwatch still
  refuses what it finds dirty or locked by then, and that refusal is shown);
* running terminals: the question names them; yes ends them first;
* uncommitted work (``review.uncommitted``): the removal is *refused*, with the
  changes that would be lost listed; removing anyway is a second, explicit step
  (``f``), itself confirmed, and only that one is forced.
"""

from __future__ import annotations

from collections.abc import Sequence

# How many changed paths the refusal lists before "and N more".
LISTED_AT_MOST = 8


def live_summary(commands: Sequence[str]) -> str:
    """``2 live agents (claude, bash)``: what ending them means, in a few words."""
    count = len(commands)
    named = ", ".join(dict.fromkeys(commands))
    return f"{count} live agent{'s' if count != 1 else ''} ({named})"


def removal_question(name: str, what: str, live: Sequence[str]) -> str:
    """The question for a removal that loses no uncommitted work."""
    if live:
        return f"{name} has {live_summary(live)}: removing ends them. Remove {what} {name}?"
    return f"Remove {what} {name}?"


def loss_details(lines: Sequence[str]) -> str:
    """The uncommitted changes, as git lists them, bounded."""
    shown = list(lines[:LISTED_AT_MOST])
    if len(lines) > LISTED_AT_MOST:
        shown.append(f"... and {len(lines) - LISTED_AT_MOST} more")
    return "\n".join(shown)


def refusal_text(name: str, changes: int, live: Sequence[str]) -> str:
    """Why the worktree is kept, and what forcing would cost."""
    ended = f"; {live_summary(live)} would be ended" if live else ""
    return (
        f"{name} is not removed: it has {changes} uncommitted change{'s' if changes != 1 else ''}"
        f" that removing would delete{ended}."
    )
