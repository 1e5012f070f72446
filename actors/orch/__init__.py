"""The orchestrator: one task to N agents in N worktrees, compared, one merged (issue 26)."""
