"""``python -m actors.web [--bind HOST[:PORT]]``: the web dashboard's process.

Run by orcad when enabled in supervisor.toml, or in the foreground by ``orca web``
(which passes its ``--bind`` here as ``ORCA_WEB_BIND``).
"""

from __future__ import annotations

from actors.web.actor import setup
from orca.actor import run_actor


def main() -> None:
    run_actor("web", setup)


if __name__ == "__main__":
    main()
