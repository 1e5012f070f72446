"""Read rules over contract rows that the command line, the UI and the actors share
(floor 3: above ``orca.contracts``, below every client and actor).

Modules (import them directly; nothing is re-exported here):

* ``handles``        short handles of worktrees, terminals and repos; resolving a typed name
* ``agent_handles``  which handle names an agent row (``worktree ps``, ``orca watch``)
* ``ps``             the ``worktree ps`` projection, a remote host's mirrored rows included
* ``resume``         which agents can resume after a reboot, and how
"""
