"""ptyd's session lifecycle (actors/ptyd/lifecycle.py): every change of a session tells
the keeper, and only the shell's one ``session_changed`` carries that out (issue 35)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from actors.ptyd import lifecycle
from actors.ptyd.lifecycle import EFFECTS, Change

PTYD = Path(lifecycle.__file__).parent


def test_every_change_has_its_effects_and_tells_the_keeper() -> None:
    assert set(EFFECTS) == set(get_args(Change))
    assert all(e.keeper in get_args(lifecycle.KeeperStep) for e in EFFECTS.values())
    # the descriptors go to the keeper once, at the spawn, and leave it once, at close
    assert [c for c, e in EFFECTS.items() if e.keeper == "deposit"] == ["spawned"]
    assert [c for c, e in EFFECTS.items() if e.keeper == "withdraw"] == ["closed"]


def test_an_exit_is_written_down_and_published_behind_its_output() -> None:
    exited = EFFECTS["exited"]
    assert exited.record and exited.publish == "after_output" and exited.hooks == "pty_exited"
    assert EFFECTS["resized"].record  # the size a later ptyd redraws at
    assert EFFECTS["spawned"].hooks == "launch"


def test_only_the_shells_session_changed_talks_to_the_keeper_about_a_session() -> None:
    """The rule was kept by hand at 8 places in 4 files; a new call site must go through
    ``Ptyd.session_changed`` (the keeper's hand-over on exit, ``handoff.py``, is the
    keeper's other protocol, not a session change)."""
    steps = re.compile(r"\bkeeper\.(deposit|update|withdraw)\(")
    found = {
        (path.name, line.strip())
        for path in PTYD.glob("*.py")
        for line in path.read_text().splitlines()
        if steps.search(line)
    }
    assert found == {
        ("actor.py", "self.keeper.deposit(info, list(fds))"),
        ("actor.py", "self.keeper.update(info)"),
        ("actor.py", "self.keeper.withdraw(info.history_key)"),
    }
