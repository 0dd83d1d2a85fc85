"""Slash commands, and the app's entries in the command palette (Ctrl+P)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.permissions import MODES
from ..engine.pricing import format_usd
from ..paths import shown_path
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
    SlashCommand("compact", "Summarise the conversation to free context: /compact [instructions]"),
    SlashCommand("context", "What fills the context window"),
    SlashCommand("config", "Effective settings and where each came from"),
    SlashCommand("memory", "Project memory files loaded (AGENTS.md, CLAUDE.md)"),
    SlashCommand("init", "Analyse the repository and write an AGENTS.md for coding agents"),
    SlashCommand("mcp", "MCP servers, their state and tools"),
    SlashCommand("resume", "List stored sessions; /resume N or ID continues one"),
    SlashCommand("todos", "The agent's current plan"),
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
| Esc | stop the running turn or `/compact` |
| Ctrl+C | stop; twice within 2 s quits |
| Ctrl+Q | quit |
| Shift+Tab | cycle the permission mode |
| Ctrl+T | show / hide the timeline (a one-line strip below 100 columns) |
| PageUp / PageDown | scroll the transcript |
| Home / End | top / bottom of the transcript (with nothing typed) |
| Ctrl+C with text selected | copy it (OSC 52) |
| Ctrl+O | expand / collapse the latest tool output or thinking |
| Ctrl+P | command palette |
| y / a / n / e | answer a permission prompt |

**Commands**

{commands}
{custom}
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


def custom_slash_commands(app: AgentApp) -> list[SlashCommand]:
    """The project's commands (`.claude/commands/*.md`) as the menu and /help show them;
    a built-in command of the same name wins."""
    built_in = {c.name for c in SLASH_COMMANDS}
    commands = getattr(getattr(app, "session", None), "custom_commands", None) or {}
    return [
        SlashCommand(name, " ".join(part for part in (command.argument_hint, command.description) if part)
                     + " (project)")
        for name, command in sorted(commands.items())
        if name not in built_in
    ]


async def _help(app: AgentApp, arg: str) -> None:
    commands = "\n".join(f"- `/{c.name}` — {c.help}" for c in SLASH_COMMANDS)
    custom = custom_slash_commands(app)
    listed = ""
    if custom:
        listed = "\n**Project commands** (`.claude/commands`)\n\n" + "\n".join(
            f"- `/{c.name}` — {_cell(c.help)}" for c in custom
        ) + "\n"
    await app.show_markdown(HELP.format(commands=commands, custom=listed))


INIT_PROMPT = """\
Please analyze this codebase and create an AGENTS.md file, which will be given to future coding agents \
(agent-tui, Claude Code and others) working in this repository.

What to add:
1. Commands that will be commonly used, such as how to build, lint, and run tests, including how to run a \
single test.
2. High-level code architecture and structure, so that future agents can be productive more quickly: the \
big picture that takes reading several files to understand.

Usage notes:
- If there is already an AGENTS.md, suggest improvements to it instead of starting over.
- If there is a CLAUDE.md, README.md, .cursorrules or .github/copilot-instructions.md, include the \
important parts of them.
- Do not repeat yourself, do not list every file, and do not invent sections or generic practices that \
the repository does not show.
- Begin the file with:

# AGENTS.md

This file provides guidance to coding agents when working with code in this repository."""


async def _init(app: AgentApp, arg: str) -> None:
    # As Claude Code's /init: the model analyses the repository with its tools and writes the file.
    app.submit_prompt(INIT_PROMPT + (f"\n\nAlso: {arg}" if arg else ""))


async def _clear(app: AgentApp, arg: str) -> None:
    await app.clear_conversation()


async def _model(app: AgentApp, arg: str) -> None:
    model = app.session.model
    if not arg:
        offline = " — the offline demo model; set ANTHROPIC_API_KEY to talk to Claude" if model.offline else ""
        lines = [f"Model: {model.label}{offline} · context window {format_tokens(app.session.context_window)}"]
        list_models = getattr(model, "list_models", None)
        available = await list_models() if list_models is not None else []
        if available:
            lines.append("Available: " + ", ".join(available) + " (/model NAME switches)")
        app.say("\n".join(lines))
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
    cost = app.session.cost_usd
    # A model without a known price shows its tokens only.
    lines = [f"Total cost:            {format_usd(cost)}"] if cost is not None else []
    lines += [
        f"Input tokens:          {totals.get('input_tokens', 0):,}",
        f"Output tokens:         {totals.get('output_tokens', 0):,}",
        f"Cache read tokens:     {totals.get('cache_read_input_tokens', 0):,}",
        f"Cache creation tokens: {totals.get('cache_creation_input_tokens', 0):,}",
        f"Model turns:           {app.session.turns}",
        f"Session time:          {format_seconds(app.clock() - app.started_at)}",
    ]
    app.say("\n".join(lines))


async def _permissions(app: AgentApp, arg: str) -> None:
    """`/permissions` lists the rules by source, numbered; `/permissions remove N` drops one;
    `/permissions MODE` sets the mode."""
    policy = app.session.policy
    word, _, rest = arg.partition(" ")
    if word == "remove":
        entries = _numbered_rules(policy)
        try:
            entry = entries[int(rest) - 1]
        except (ValueError, IndexError):
            app.say(f"No rule number {rest!r}; /permissions lists them.", kind="error")
            return
        try:
            policy.remove_rule(entry)
        except (KeyError, OSError, ValueError) as exc:
            app.say(f"Could not remove {entry.rule}: {exc}", kind="error")
            return
        where = f" and from {entry.path}" if getattr(entry, "path", None) else ""
        app.say(f"Removed {entry.behavior} rule {entry.rule} ({entry.source}){where}.")
        return
    if arg:
        if arg not in MODES:
            app.say(f"Unknown mode {arg!r}; one of: {', '.join(MODES)}", kind="error")
            return
        policy.mode = arg
        app.refresh_header()
    lines = [f"**Permission mode:** `{policy.mode}` (Shift+Tab cycles default → acceptEdits → plan)", ""]
    entries = _numbered_rules(policy)
    if not entries:
        lines.append("No rules: read-only tools run, everything else asks.")
    else:
        lines += ["| # | rule | decision | source |", "| --- | --- | --- | --- |"]
        for n, entry in enumerate(entries, 1):
            lines.append(f"| {n} | `{entry.rule}` | {entry.behavior} | {entry.source} |")
        lines += ["", "`/permissions remove N` removes a rule (also from its settings file)."]
    await app.show_markdown("\n".join(lines))


def _numbered_rules(policy: object) -> list:
    grouped = policy.entries_by_source()  # type: ignore[attr-defined]
    return [entry for entries in grouped.values() for entry in entries]


async def _compact(app: AgentApp, arg: str) -> None:
    await app.compact_conversation(arg)


async def _context(app: AgentApp, arg: str) -> None:
    breakdown = await app.session.context_breakdown()
    window = breakdown.window
    lines = [
        f"**Context** · {breakdown.model} · {format_tokens(breakdown.total)} of {format_tokens(window)} used "
        f"({breakdown.total / window * 100 if window else 0:.1f}%)" + ("" if breakdown.exact else " · estimated"),
        "",
        "| part | tokens | share |",
        "| --- | ---: | ---: |",
    ]
    for label, tokens in breakdown.rows():
        share = tokens / window * 100 if window else 0.0
        lines.append(f"| {label} | {tokens:,} | {share:.1f}% |")
    state = "on" if breakdown.auto_compact else "off"
    lines += ["", f"Auto-compact ({state}) at {format_tokens(breakdown.auto_compact_threshold)}."]
    await app.show_markdown("\n".join(lines))


async def _config(app: AgentApp, arg: str) -> None:
    settings = app.session.options.settings
    if settings is None or not hasattr(settings, "effective"):
        app.say("No settings were loaded for this session.")
        return
    lines = ["| key | value | from |", "| --- | --- | --- |"]
    for row in settings.effective():
        value = json.dumps(row.value, ensure_ascii=False) if not isinstance(row.value, str) else row.value
        lines.append(f"| `{row.key}` | {_cell(value)} | {row.source} |")
    for problem in getattr(settings, "problems", []):
        lines.append(f"\n**Problem:** {problem}")
    await app.show_markdown("\n".join(lines))


async def _memory(app: AgentApp, arg: str) -> None:
    memory = app.session.reload_memory() if arg == "reload" else app.session.memory
    files = list(memory.files)
    if not files:
        app.say("No memory files found (AGENTS.md, CLAUDE.md or .agent-tui/AGENTS.md from the repository root "
                "down to here, or AGENTS.md in the user config folder).")
        return
    lines = ["| file | scope | size |", "| --- | --- | ---: |"]
    for f in files:
        via = f" (imported by {f.imported_from.name})" if f.imported_from else ""
        cut = " (truncated)" if f.truncated else ""
        lines.append(f"| `{shown_path(f.path, app.session.cwd)}`{via} | {f.scope} | {len(f.content):,} chars{cut} |")
    for problem in getattr(memory, "problems", []):
        lines.append(f"\n**Problem:** {problem}")
    lines.append("\n`/memory reload` reads them again.")
    await app.show_markdown("\n".join(lines))


async def _mcp(app: AgentApp, arg: str) -> None:
    manager = getattr(app.session, "mcp", None)
    if manager is None:
        app.say("No MCP servers configured (mcpServers in settings, or --mcp-config).")
        return
    lines = []
    for server in manager.servers():
        lines.append(f"**{server.name}** · {server.state} · {server.transport} `{_cell(server.target)}`")
        if server.error:
            lines.append(f"> {server.error.splitlines()[0] if server.error else ''}")
        for tool in server.tools:
            flag = " (read-only)" if tool.read_only else ""
            lines.append(f"- `mcp__{server.name}__{tool.name}`{flag} — {_cell(tool.description or '')[:100]}")
        lines.append("")
    await app.show_markdown("\n".join(lines))


async def _resume(app: AgentApp, arg: str) -> None:
    from ..engine.store import SessionNotFound, list_sessions, replay_events

    if app.session.running:
        app.say("A turn is running: press Esc first, then /resume.", kind="error")
        return
    sessions = [s for s in list_sessions(app.session.cwd) if s.session_id != app.session.session_id]
    if not arg:
        if not sessions:
            app.say("No other stored sessions for this directory.")
            return
        lines = ["| # | when | prompts | first prompt | id |", "| ---: | --- | ---: | --- | --- |"]
        for n, info in enumerate(sessions[:20], 1):
            when = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
            lines.append(f"| {n} | {when} | {info.turn_count} | {_cell(info.first_prompt)[:60]} | "
                         f"`{info.session_id[:8]}` |")
        lines.append("\n`/resume N` (or an id prefix) continues that session.")
        await app.show_markdown("\n".join(lines))
        return
    target = arg
    if arg.isdigit() and 0 < int(arg) <= len(sessions):
        target = sessions[int(arg) - 1].session_id
    try:
        transcript = app.session.resume(target)
    except SessionNotFound:
        app.say(f"No stored session matches {arg!r}; /resume lists them.", kind="error")
        return
    await app.clear_view()
    await app.replay(replay_events(transcript))
    if app.session.fork_notice:
        app.say(app.session.fork_notice, kind="error")
    app.refresh_header()
    app.say(f"Resumed session {app.session.session_id[:8]} ({len(app.session.history)} messages).")


async def _todos(app: AgentApp, arg: str) -> None:
    todos = app.session.todos
    if not todos:
        app.say("No plan yet: the agent writes one with TodoWrite for multi-step work.")
        return
    marks = {"completed": "☑", "in_progress": "◐", "pending": "☐"}
    await app.show_markdown("\n".join(f"- {marks.get(t.get('status'), '☐')} {t.get('content', '')}" for t in todos))


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


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
    "compact": _compact,
    "context": _context,
    "config": _config,
    "memory": _memory,
    "init": _init,
    "mcp": _mcp,
    "resume": _resume,
    "todos": _todos,
    "transcript": _transcript,
    "export": _export,
    "exit": _exit,
}
