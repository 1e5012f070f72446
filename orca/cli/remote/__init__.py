"""The command line's side of remote hosts: remote rows printed next to local ones
(``readers``, ``watch``), ``term ... HOST:HANDLE`` and ``worktree ... HOST:WORKTREE``
over the gateway link (``terminal``, ``worktrees``). What the gateway actor shares with
the CLI (keys, known hosts, access, the link's client) stays in ``orca.remote``.
"""
