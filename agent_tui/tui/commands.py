"""Slash commands, and the app's entries in the command palette (Ctrl+P)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.permissions import MODES
from .state import format_seconds, format_tokens

if TYPE_CHECKING:
    from .app import AgentApp


@dataclass(frozen=True)
class SlashCommand:
    name: str
    help: str


SLASH_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "Keys and commands"),
    SlashCommand("clear", "Start a new conversation (forgets the history)"),
    SlashCommand("model", "Show the model; /model NAME switches to another"),
    SlashCommand("cost", "Tokens used and time spent in this session"),
    SlashCommand("permissions", "Mode and rules; /permissions MODE sets the mode"),
    SlashCommand("theme", "Pick a theme; /theme NAME sets one"),
    SlashCommand("transcript", "The whole conversation, including pruned entries"),
    SlashCommand("export", "Write the conversation as Markdown: /export [FILE]"),
    SlashCommand("exit", "Quit agent-tui"),
)

HELP = """\
**Keys**

| key | does |
| --- | --- |
| Enter | send (queued while a turn runs) |
| Shift+Enter, Ctrl+J | newline |
| Up / Down | prompt history |
| Esc | stop the running turn |
| Ctrl+C | stop; twice within 2 s quits |
| Ctrl+Q | quit |
| Shift+Tab | cycle the permission mode |
| Ctrl+T | show / hide the timeline |
| Ctrl+O | expand / collapse the latest tool output |
| Ctrl+P | command palette |
| y / a / n / e | answer a permission prompt |

**Commands**

{commands}

`@path` attaches a file to the prompt (it is read with the Read tool first).
"""


def parse_slash(text: str) -> tuple[str, str] | None:
    """`"/model opus"` -> ("model", "opus"); None when `text` is not a known command."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, arg = stripped[1:].partition(" ")
    if not any(c.name == name for c in SLASH_COMMANDS):
        return None
    return name, arg.strip()


async def run_slash(app: AgentApp, name: str, arg: str) -> None:
    handler = _HANDLERS[name]
    await handler(app, arg)


async def _help(app: AgentApp, arg: str) -> None:
    commands = "\n".join(f"- `/{c.name}` — {c.help}" for c in SLASH_COMMANDS)
    await app.show_markdown(HELP.format(commands=commands))


async def _clear(app: AgentApp, arg: str) -> None:
    await app.clear_conversation()


async def _model(app: AgentApp, arg: str) -> None:
    model = app.session.model
    if not arg:
        offline = " — the offline demo model; set ANTHROPIC_API_KEY to talk to Claude" if model.offline else ""
        app.say(f"Model: {model.label}{offline} · context window {format_tokens(app.session.context_window)}")
        return
    if model.offline:
        app.say("The offline demo model cannot switch models; start agent-tui with an API key.", kind="error")
        return
    if app.session.running:
        app.say("Wait for the running turn to finish (or press Esc) before switching models.", kind="error")
        return
    # AnthropicModel sends `name` with every request.
    model.name = arg
    model.label = arg
    app.refresh_header()
    app.say(f"Model set to {arg}")


async def _cost(app: AgentApp, arg: str) -> None:
    totals = app.session.usage_totals
    lines = [
        f"Input tokens:          {totals.get('input_tokens', 0):,}",
        f"Output tokens:         {totals.get('output_tokens', 0):,}",
        f"Cache read tokens:     {totals.get('cache_read_input_tokens', 0):,}",
        f"Cache creation tokens: {totals.get('cache_creation_input_tokens', 0):,}",
        f"Model turns:           {app.session.turns}",
        f"Session time:          {format_seconds(app.clock() - app.started_at)}",
    ]
    app.say("\n".join(lines))


async def _permissions(app: AgentApp, arg: str) -> None:
    policy = app.session.policy
    if arg:
        if arg not in MODES:
            app.say(f"Unknown mode {arg!r}; one of: {', '.join(MODES)}", kind="error")
            return
        policy.mode = arg
        app.refresh_header()
    lines = [f"Permission mode: {policy.mode} (Shift+Tab cycles default → acceptEdits → plan)"]
    for label, rules in (("allow", policy.allow), ("ask", policy.ask), ("deny", policy.deny)):
        lines.append(f"{label}: {', '.join(rules) if rules else '(none)'}")
    app.say("\n".join(lines))


async def _theme(app: AgentApp, arg: str) -> None:
    if not arg:
        app.action_change_theme()
        return
    if arg not in app.available_themes:
        app.say(f"Unknown theme {arg!r}; one of: {', '.join(sorted(app.available_themes))}", kind="error")
        return
    app.theme = arg
    app.say(f"Theme: {arg}")


async def _transcript(app: AgentApp, arg: str) -> None:
    app.action_show_transcript()


async def _export(app: AgentApp, arg: str) -> None:
    target = Path(arg).expanduser() if arg else Path(f"agent-tui-{app.session.session_id[:8]}.md")
    if not target.is_absolute():
        target = app.session.cwd / target
    written = app.export_transcript(target)
    if written is not None:
        app.say(f"Conversation written to {written}")


async def _exit(app: AgentApp, arg: str) -> None:
    await app.action_quit()


_HANDLERS: dict[str, Callable[[AgentApp, str], Awaitable[None]]] = {
    "help": _help,
    "clear": _clear,
    "model": _model,
    "cost": _cost,
    "permissions": _permissions,
    "theme": _theme,
    "transcript": _transcript,
    "export": _export,
    "exit": _exit,
}
