"""Remote execution hosts: keys, known hosts, the client side of the gateway link.

Shared by the ``gateway`` actor (which serves and follows remote hosts) and the CLI
(``orca host``, remote rows in ``worktree ps``/``ls``/``term ls``, ``term ... HOST:HANDLE``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from orca.paths import OrcaPaths

# The known hosts, pinned server keys included (``orca host add``; orca.remote.hosts).
KNOWN_HOSTS_FILE = "remote-hosts.json"


def known_hosts_path(paths: OrcaPaths) -> Path:
    return paths.data_dir / KNOWN_HOSTS_FILE


def any_known_host(paths: OrcaPaths | None = None) -> bool:
    """Whether ``orca host add`` ever recorded a host: one stat, so a local listing
    (``worktree ps``, ``worktree ls``, ``term ls``) imports nothing remote without one."""
    from orca.paths import resolve_paths

    return known_hosts_path(paths or resolve_paths()).exists()
