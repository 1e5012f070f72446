"""ptyd's session lifecycle, pure: what each change of a session owes the rest of the
tree (issue 35, "every session change tells the keeper").

A session changes in five ways: it is **spawned** (``term.spawn``), **resized** (by
any client: ``term.resize``, an attach stream, a handed terminal, a ``hand``'s size),
**rekeyed** (its worktree was renamed), it **exited** (its child ended; the session
stays, with its screen and exit code), or it is **closed** (``term.close``: forgotten).
Each owes the fd keeper a step, because the keeper's copy is what a restarted ptyd
adopts (a deposit with the descriptors, an update of the description, a withdrawal);
the description on disk (``sessions.SessionTable.record``: what a later ptyd shows of an
ended terminal); an event for every mirror; and, for some, a word to hooks.

:data:`EFFECTS` is that table; the shell (``actor.Ptyd.session_changed``) carries a
row out, so no call site can tell the keeper and forget the event, or the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Change = Literal["spawned", "resized", "rekeyed", "exited", "closed"]
KeeperStep = Literal["deposit", "update", "withdraw"]
HooksWord = Literal["launch", "pty_exited"]
# When the change's event goes out: at once, or after the session's final output (an
# exit is published behind the bytes the child wrote before it ended).
Publish = Literal["now", "after_output"]


@dataclass(frozen=True)
class Effects:
    keeper: KeeperStep
    record: bool  # the description on disk is written again
    publish: Publish
    hooks: HooksWord | None = None


EFFECTS: Mapping[Change, Effects] = {
    # the table wrote the description as it spawned; hooks learns the launch's token
    "spawned": Effects(keeper="deposit", record=False, publish="now", hooks="launch"),
    # the size a later ptyd redraws the screen at (issue 13)
    "resized": Effects(keeper="update", record=True, publish="now"),
    # the table wrote the description under its new key as it rekeyed
    "rekeyed": Effects(keeper="update", record=False, publish="now"),
    # the exit code, on disk and in the keeper (a restarted ptyd must not watch a pid
    # that may be reused); hooks clears the pane's agent row after the final output
    "exited": Effects(keeper="update", record=True, publish="after_output", hooks="pty_exited"),
    # forgotten: the keeper lets the descriptors go; the history is dropped after the kill
    "closed": Effects(keeper="withdraw", record=False, publish="now"),
}
