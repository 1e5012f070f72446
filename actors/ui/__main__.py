"""``python -m actors.ui``: what ``orca ui`` runs (``orca/cli/ui.py`` execs it)."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orca ui", description="the Orca terminal UI")
    parser.add_argument("--no-bell", action="store_true", help="no terminal bell on blocked/done")
    args = parser.parse_args(argv)
    from orca.paths import resolve_paths

    paths = resolve_paths()
    # The UI's own log (never another actor's file): warnings only, in the log dir.
    try:
        paths.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(paths.log_dir / "ui.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        logging.basicConfig(
            stream=os.fdopen(fd, "a", encoding="utf-8"),
            level=logging.WARNING,
            format="%(asctime)s %(name)s %(levelname)s %(message)s",
        )
    except OSError:
        logging.basicConfig(level=logging.CRITICAL)
    from actors.ui.app import OrcaApp

    OrcaApp(paths, bell=not args.no_bell, settle_heap=True).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
