"""Remote execution hosts: keys, known hosts, the client side of the gateway link.

Shared by the ``gateway`` actor (which serves and follows remote hosts) and the CLI
(``orca host``, remote rows in ``worktree ps``/``ls``/``term ls``, ``term ... HOST:HANDLE``).
"""
