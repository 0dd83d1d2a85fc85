"""May this tool call run? (docs/architecture.md §6)

policy.py: modes, rules and the decision for each call (with a PreToolUse hook's say);
rules.py: the rule syntax (Tool, Tool(content), Bash prefixes, gitignore-style paths).
"""
