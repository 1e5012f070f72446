"""gitwatch: the sole owner of git facts and git worktree mutations (seed 01 §5)."""
