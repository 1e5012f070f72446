"""How every Orca process writes its log: one line per record, on stderr (orcad files
each actor's stderr in its log; the keeper's is its log file). Standard library only,
so the keeper pays for nothing else."""

from __future__ import annotations

import logging
import os
import sys


def configure_logging(name: str) -> None:
    """``time name[pid] LEVEL logger: message`` at ``ORCA_LOG_LEVEL`` (INFO)."""
    logging.basicConfig(
        level=os.environ.get("ORCA_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s {name}[%(process)d] %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
