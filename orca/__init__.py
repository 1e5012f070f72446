"""Orca: workspaces, terminals and agent status for many parallel coding agents.

The shared kernel lives here: ``orca.model`` (pure rules), ``orca.wire`` (codec,
envelopes, schemas), ``orca.actor`` (trio + ZeroMQ runtime), ``orca.client`` and
``orca.cli``. Each process of the tree lives in ``actors/<name>/``.
"""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
