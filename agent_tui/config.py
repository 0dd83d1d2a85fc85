"""Layered settings: one typed object (the contract other modules read).

Layers, lowest first: defaults < user (`<config dir>/agent-tui/settings.json`)
< project (`.agent-tui/settings.json`) < local (`.agent-tui/settings.local.json`)
< `--settings FILE` < CLI flags < environment (`ANTHROPIC_*`, `AGENT_TUI_*`).
Keys use Claude Code's spelling in the files (`fallbackModel`, `mcpServers`);
attributes are snake_case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Settings:
    model: str | None = None
    fallback_model: str | None = None
    max_turns: int | None = None
    # {"allow": [...], "deny": [...], "ask": [...], "defaultMode": str, "additionalDirectories": [...]}
    permissions: dict[str, Any] = field(default_factory=dict)
    # Claude Code's hook table: {"PreToolUse": [{"matcher": str, "hooks": [{"type": "command", ...}]}], ...}
    hooks: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    # {"auto": bool, "thresholdPercent": float, "microcompactKeep": int, ...}
    compaction: dict[str, Any] = field(default_factory=dict)
    # {"maxConcurrency": int, ...}
    tools: dict[str, Any] = field(default_factory=dict)
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    context_window: int | None = None
    # Where each key's effective value came from: {"model": "project (.agent-tui/settings.json)", ...}
    sources: dict[str, str] = field(default_factory=dict)
    # Problems found while loading (invalid files, bad keys), reported to the user.
    problems: list[str] = field(default_factory=list)
