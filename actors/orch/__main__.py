"""``python -m actors.orch``: the orchestrator process (runs, tasks, messages)."""

from __future__ import annotations

from actors.orch.actor import setup
from orca.actor import run_actor


def main() -> None:
    run_actor("orch", setup)


if __name__ == "__main__":
    main()
