"""This process's execution host id.

Every session and status row carries the id of the host that runs it (``local``,
``ssh:<urlenc>``, ``runtime:<urlenc>``; seed 01 §4–§6), so a client mirroring several
hosts never merges one host's rows into another's. A host runs its actors with
``ORCA_HOST_ID`` set; a plain local install leaves it unset and is ``local``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from orca.model.hosts import LOCAL_HOST_ID, is_execution_host_id

HOST_ID_ENV = "ORCA_HOST_ID"


def current_host_id(environ: Mapping[str, str] | None = None) -> str:
    """The execution host id from ``ORCA_HOST_ID`` (default ``local``); invalid ids refused."""
    value = (os.environ if environ is None else environ).get(HOST_ID_ENV) or LOCAL_HOST_ID
    if not is_execution_host_id(value):
        raise ValueError(
            f"{HOST_ID_ENV}={value!r} is not an execution host id (local, ssh:…, runtime:…)"
        )
    return value
