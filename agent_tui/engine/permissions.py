"""Permission decisions: the hook point the executor asks before every tool call.

This is the engine-issue version: modes and `Tool` / `Tool(content)` /
`Bash(prefix:*)` rules from flags, read-only calls allowed, everything else
asked through a `permission_requested` event (or decided outright in print
mode).  The full rule engine (settings files, path rules, dangerous-command
flags) extends this module.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
# Shift+Tab cycles through these (bypass and dontAsk are chosen explicitly).
CYCLE = ("default", "acceptEdits", "plan")
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})


@dataclass(frozen=True, slots=True)
class Decision:
    # "allow" | "deny" | "ask"
    behavior: str
    message: str = ""
    danger: str | None = None
    suggested_rule: str | None = None
    rule: str | None = None


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """A person's answer to a permission request (what the Future resolves to)."""

    # "allow" | "deny"
    behavior: str
    remember: bool = False
    feedback: str | None = None


def parse_rule(rule: str) -> tuple[str, str | None]:
    """`Bash(npm test:*)` -> ("Bash", "npm test:*"); `Read` -> ("Read", None)."""
    rule = rule.strip()
    if rule.endswith(")") and "(" in rule:
        name, _, rest = rule.partition("(")
        return name.strip(), rest[:-1]
    return rule, None


def rule_content_for(tool_name: str, input: dict[str, Any]) -> str | None:
    if tool_name == "Bash":
        return str(input.get("command", ""))
    for key in ("file_path", "path", "pattern", "url"):
        if isinstance(input.get(key), str):
            return input[key]
    return None


def rule_matches(rule: str, tool_name: str, input: dict[str, Any]) -> bool:
    name, content = parse_rule(rule)
    if name != tool_name and not (name.startswith("mcp__") and tool_name.startswith(name + "__")):
        return False
    if content is None or content in ("", "*"):
        return True
    value = rule_content_for(tool_name, input)
    if value is None:
        return False
    if tool_name == "Bash":
        if content.endswith(":*"):
            prefix = content[:-2]
            return value == prefix or value.startswith(prefix + " ")
        if "*" in content:
            return fnmatch.fnmatchcase(value, content)
        return value == content
    return fnmatch.fnmatchcase(value, content) or value == content


def suggest_rule(tool_name: str, input: dict[str, Any]) -> str:
    """A narrow rule for "yes, don't ask again": never `Bash(*)`."""
    if tool_name == "Bash":
        words = str(input.get("command", "")).split()
        if not words:
            return "Bash"
        prefix = " ".join(words[:2]) if len(words) > 1 and not words[1].startswith("-") else words[0]
        return f"Bash({prefix}:*)"
    if tool_name in EDIT_TOOLS:
        return tool_name
    return tool_name


@dataclass
class PermissionPolicy:
    """Decides allow / deny / ask for each tool call.

    `interactive=False` (print mode) turns every "ask" into a deny, which the
    caller reports in `permission_denials`.
    """

    mode: str = "default"
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    interactive: bool = True
    # Where "yes, don't ask again" rules are written (None: this session only).
    local_settings_path: Path | None = None

    def decide(self, tool: Any, input: dict[str, Any]) -> Decision:
        name = tool.name
        for rule in self.deny:
            if rule_matches(rule, name, input):
                return Decision("deny", f"Permission to use {name} has been denied by rule {rule}.", rule=rule)
        for rule in self.ask:
            if rule_matches(rule, name, input):
                return self._ask(tool, input, f"Rule {rule} requires approval.")
        read_only = _safe_call(tool.is_read_only, input)
        if self.mode == "bypassPermissions":
            return Decision("allow")
        if self.mode == "plan" and not read_only:
            return Decision(
                "deny",
                f"{name} is not allowed in plan mode: only read-only tools run. "
                "Present the plan to the user instead of making changes.",
            )
        for rule in self.allow:
            if rule_matches(rule, name, input):
                return Decision("allow", rule=rule)
        if read_only:
            return Decision("allow")
        if self.mode == "acceptEdits" and name in EDIT_TOOLS:
            return Decision("allow")
        if self.mode == "dontAsk":
            return Decision("deny", f"Permission to use {name} was not granted (dontAsk mode).")
        return self._ask(tool, input, f"{name} wants to {_verb(name)}.")

    def _ask(self, tool: Any, input: dict[str, Any], message: str) -> Decision:
        if not self.interactive:
            return Decision("deny", f"Permission to use {tool.name} was not granted (non-interactive mode).")
        return Decision("ask", message, suggested_rule=suggest_rule(tool.name, input))

    def remember(self, rule: str) -> None:
        """Record an allow rule for this session and, when configured, the local settings file."""
        if rule not in self.allow:
            self.allow.append(rule)
        path = self.local_settings_path
        if path is None:
            return
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError):
            data = {}
        perms = data.setdefault("permissions", {})
        allow = perms.setdefault("allow", [])
        if rule not in allow:
            allow.append(rule)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(path)

    def cycle_mode(self) -> str:
        i = CYCLE.index(self.mode) if self.mode in CYCLE else -1
        self.mode = CYCLE[(i + 1) % len(CYCLE)]
        return self.mode


def _safe_call(fn: Any, input: dict[str, Any]) -> bool:
    try:
        return bool(fn(input))
    except Exception:
        return False


def _verb(name: str) -> str:
    return {
        "Bash": "run a command",
        "Write": "write a file",
        "Edit": "edit a file",
        "MultiEdit": "edit a file",
    }.get(name, "run")
