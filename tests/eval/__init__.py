"""A small evaluation of agent-tui on repository tasks (`python -m tests.eval`); see tasks.py and harness.py."""
