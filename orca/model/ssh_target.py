"""SshTarget: where ``ssh`` reaches an execution host (seed 02 §2 ``sshTargets``).

A target's ``id`` is what names the host everywhere else: rows carry the execution
host id ``ssh:<encodeURIComponent(id)>`` (``orca.model.hosts.ssh_host_id``), and a
remote repo's ``connectionId`` is that id (seed 01 §4.6). ``orca host add NAME
ssh://…`` records one with ``id`` = ``label`` = NAME. Only the fields Orca reads are
typed; anything a newer build writes survives in ``extra``.

Targets written before ids existed (``id`` missing or empty) are given one once, on
load (``actors/store/load.py``, marker ``_sshTargetIdsMigrated``): their label when it
is free, else a fresh UUID; a repo whose ``connectionId`` named such a target by its
label follows it to the new id.
"""

from __future__ import annotations

from orca.model.codec import Record

__all__ = ["SshTarget"]


class SshTarget(Record, frozen=True, kw_only=True):
    """One SSH target; ``id`` is stable for life (the host id and connectionIds hold it)."""

    id: str = ""  # "" only in a file written before ids existed (migrated on load)
    label: str = ""
    # ssh's own destination: ``[user@]host`` or a ``Host`` alias of an ssh_config.
    destination: str = ""
    port: int | None = None
    # An ssh_config for ``ssh -F`` (None: the user's own).
    config_file: str | None = None
    # The Orca command on that host (None: ``orca`` on its PATH).
    remote_orca: str | None = None
