"""The engine's public surface: what front ends (the TUI, print mode, the Agent SDK transport,
the ACP agent, `agent_tui.ask()`) use.  Loaded on first use, so importing one engine module stays cheap (the
full-screen app draws before the engine loads)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import events
    from .bus import Subscription
    from .claude_files import CustomCommand, record_mcp_json_choice
    from .command_expansion import CommandExpansionError
    from .events import Event
    from .events import PermissionRequested as PermissionRequest
    from .loop.query import Terminal, TerminalReason
    from .mcp_features import ElicitationAnswer, ElicitationForm
    from .messages import ATTACHMENT_CALL, Message, blocks, is_attachment, valid_utf8
    from .models.base import ModelClient
    from .permissions.policy import PermissionAnswer
    from .pricing import format_usd
    from .session import Result, Session, SessionOptions
    from .store import SessionInfo, SessionNotFound, Transcript, list_sessions, replay_events, tail_start

__all__ = [
    "ATTACHMENT_CALL",
    "CommandExpansionError",
    "CustomCommand",
    "ElicitationAnswer",
    "ElicitationForm",
    "Event",
    "Message",
    "ModelClient",
    "PermissionAnswer",
    "PermissionRequest",
    "Result",
    "Session",
    "SessionInfo",
    "SessionNotFound",
    "Transcript",
    "SessionOptions",
    "Subscription",
    "Terminal",
    "TerminalReason",
    "blocks",
    "events",
    "format_usd",
    "is_attachment",
    "list_sessions",
    "record_mcp_json_choice",
    "replay_events",
    "tail_start",
    "valid_utf8",
]

_WHERE = {
    "events": (".events", None),
    # A custom command's `!`-line that may not run (`Session.expand_command`).
    "CommandExpansionError": (".command_expansion", "CommandExpansionError"),
    "Event": (".events", "Event"),
    "PermissionRequest": (".events", "PermissionRequested"),
    "PermissionAnswer": (".permissions.policy", "PermissionAnswer"),
    # What a front end hands the session: the model provider's client (docs/architecture.md §9).
    "ModelClient": (".models.base", "ModelClient"),
    "Result": (".session", "Result"),
    "Session": (".session", "Session"),
    "SessionOptions": (".session", "SessionOptions"),
    # What `Session.resume()` raises for an id it cannot find.
    "SessionNotFound": (".store", "SessionNotFound"),
    "Transcript": (".store", "Transcript"),
    # What `Session.subscribe()` returns.
    "Subscription": (".bus", "Subscription"),
    # How a query ended (print mode's result object is made from it).
    "Terminal": (".loop.query", "Terminal"),
    "TerminalReason": (".loop.query", "TerminalReason"),
    # Stored sessions (`-c`, `-r`, an editor's session/list and session/load): listed, and redrawn as events.
    "SessionInfo": (".store", "SessionInfo"),
    "list_sessions": (".store", "list_sessions"),
    "replay_events": (".store", "replay_events"),
    "tail_start": (".store", "tail_start"),
    # An MCP server's elicitation: the form its schema describes, and the answer (docs/architecture.md §5).
    "ElicitationAnswer": (".mcp_features", "ElicitationAnswer"),
    "ElicitationForm": (".mcp_features", "ElicitationForm"),
    # Reading a history (exports): its messages' blocks, and which are `@`-attachments.
    "ATTACHMENT_CALL": (".messages", "ATTACHMENT_CALL"),
    "Message": (".messages", "Message"),
    "blocks": (".messages", "blocks"),
    "is_attachment": (".messages", "is_attachment"),
    # Text for a terminal or a pipe: undecodable bytes from files or commands as U+FFFD.
    "valid_utf8": (".messages", "valid_utf8"),
    # A cost as people read it ("$0.0123").
    "format_usd": (".pricing", "format_usd"),
    # A custom slash command (`Session.find_command`), as `.claude/commands` defines it.
    "CustomCommand": (".claude_files", "CustomCommand"),
    # The answer about `.mcp.json` servers, kept where Claude Code keeps it (a settings file).
    "record_mcp_json_choice": (".claude_files", "record_mcp_json_choice"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    loaded = import_module(module, __name__)
    return loaded if attribute is None else getattr(loaded, attribute)
