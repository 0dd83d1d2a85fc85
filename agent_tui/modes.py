"""The permission modes: one vocabulary for the settings (which check it), the permission policy and
the front ends (a leaf, like `paths.py`: it imports nothing of agent_tui)."""

from __future__ import annotations

from typing import Literal

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]
PERMISSION_MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
