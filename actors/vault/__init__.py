"""The ``vault`` actor: a rebuildable index of every agent's transcripts (seed 02 §11)."""
