"""Test support: starting and cleaning up real Orca processes in temp homes."""
