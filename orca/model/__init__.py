"""Pure domain model and identity rules shared by every actor and client (no I/O).

Modules (import them directly; nothing is re-exported here):

* ``codec``               Record base class; builtins/JSON/msgpack keeping unknown fields
* ``ids``                 worktree ids, folder-workspace ids, WorkspaceKeys
* ``hosts``               ExecutionHostId and the worktree host precedence
* ``panes``               pane keys and PTY session ids
* ``types_repo``, ``worktree``, ``tabs``, ``session``, ``state``   the records
* ``session_keys``        the three spellings of a worktree in session-map keys
* ``naming``              sanitize_worktree_name, workspace root and worktree paths
* ``ownership``           orca-managed / agent-scratch / external / unknown-legacy
* ``merge``               Worktree projections and the display-name fallback
* ``layout``              split-tree queries and identity-preserving pruning
* ``hydrate``             dropping session rows for unknown workspaces
* ``identity_migration``  re-keying everything after a worktree folder moved
* ``agent_status``        agent-status rows, the per-worktree summary and display decay
* ``vt``                  where an escape sequence ends, terminal queries, detach resets
"""
