"""The query loop (docs/architecture.md §3, §4).

query.py: `query()`, its State, Transition and Terminal, one phase per step of an iteration;
attempts.py: one request to the model, attempt by attempt (retries, fallback, error texts);
executor.py: the StreamingToolExecutor that runs tools while the model streams;
subagent.py: the Agent tool's subagent, a query of its own; budget.py: --max-budget-tokens.
"""
