"""The command registry: slash commands and keys, and everything listed from them.

One place says what each slash command and each key does.  The slash menu, the
command palette (Ctrl+P), `/help` and its keys table are all generated from it;
the keys come from the app's keymap, so a remapped binding shows its new key.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config import PERMISSION_MODES as MODES
from ..paths import shown_path
from .state import format_seconds, format_tokens

if TYPE_CHECKING:
    from ..config import Settings
    from ..engine import Session


class CommandHost(Protocol):
    """What the slash commands use of the app (AgentApp is the one implementation)."""

    session: Session
    settings: Settings
    started_at: float
    theme: str

    @property
    def available_themes(self) -> Mapping[str, Any]: ...

    def clock(self) -> float: ...

    def key_display(self, binding_id: str) -> str: ...

    def say(self, text: str, kind: str = "info") -> None: ...

    async def show_markdown(self, text: str) -> None: ...

    def submit_prompt(self, text: str, *, allowed_tools: tuple[str, ...] = ()) -> None: ...

    def refresh_header(self) -> None: ...

    async def clear_conversation(self) -> None: ...

    async def compact_conversation(self, instructions: str) -> None: ...

    async def clear_view(self) -> None: ...

    async def replay(self, events: list) -> None: ...

    async def load_history(self, events: list) -> None: ...

    def export_transcript(self, target: Path) -> Path | None: ...

    def transcript_markdown(self) -> str: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def action_show_transcript(self) -> None: ...

    async def action_quit(self) -> None: ...


Handler = Callable[[CommandHost, str], Awaitable[None]]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    help: str
    # None for a project command (`.claude/commands`): it expands into a prompt instead.
    run: Handler | None = None
    # Its title and description in the command palette; None keeps it out of the palette.
    palette: tuple[str, str] | None = None


@dataclass(frozen=True)
class KeyCommand:
    """A row of the keys table: bindings (by id, as a keymap names them) and what they do."""

    binding_ids: tuple[str, ...]
    does: str
    # Said after the keys ("with text selected").
    when: str = ""
    # Its title and description in the command palette, which runs the first binding's action.
    palette: tuple[str, str] | None = None


@dataclass(frozen=True)
class PaletteEntry:
    title: str
    help: str
    slash: str = ""  # the slash command it runs, or
    binding_id: str = ""  # the binding whose action it runs


_KEY_NAMES = {
    "escape": "Esc",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    "ctrl": "Ctrl",
    "shift": "Shift",
    "alt": "Alt",
    "super": "Super",
}


def key_label(keys: str) -> str:
    """A binding's key string as /help shows it: `"shift+enter,ctrl+j"` -> `"Shift+Enter, Ctrl+J"`."""
    labels = []
    for key in keys.split(","):
        parts = key.strip().split("+")
        if len(parts) == 1 and len(parts[0]) == 1:
            labels.append(parts[0])  # a letter answered on its own (y / a / n / e)
            continue
        labels.append("+".join(_KEY_NAMES.get(part, part.upper() if len(part) == 1 else part.capitalize())
                               for part in parts))
    return ", ".join(labels)


def parse_slash(text: str) -> tuple[str, str] | None:
    """`"/model opus"` -> ("model", "opus"); None when `text` is not a known command."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, arg = stripped[1:].partition(" ")
    if name not in _BY_NAME:
        return None
    return name, arg.strip()


async def run_slash(app: CommandHost, name: str, arg: str) -> None:
    handler = _BY_NAME[name].run
    assert handler is not None
    await handler(app, arg)


def custom_slash_commands(session: Session | None) -> list[SlashCommand]:
    """The project's commands (`.claude/commands/*.md`) as the menu and /help show them;
    a built-in command of the same name wins."""
    commands = session.custom_commands if session is not None else {}
    return [
        SlashCommand(name, " ".join(part for part in (command.argument_hint, command.description) if part)
                     + " (project)")
        for name, command in sorted(commands.items())
        if name not in _BY_NAME
    ]


def mcp_slash_commands(session: Session | None) -> list[SlashCommand]:
    """The connected MCP servers' prompts, `/mcp__server__prompt` (the server expands them)."""
    prompts = session.mcp_prompts() if session is not None else []
    return [SlashCommand(p.command, " ".join(part for part in (p.argument_hint, p.description) if part) + " (MCP)")
            for p in prompts]


def menu_commands(session: Session | None) -> list[SlashCommand]:
    """What the slash menu offers: the built-in commands, then the project's and the MCP servers'."""
    return [*SLASH_COMMANDS, *custom_slash_commands(session), *mcp_slash_commands(session)]


def palette_entries(key_display: Callable[[str], str]) -> list[PaletteEntry]:
    """The app's entries in the command palette, each naming its key or slash command."""
    entries = [
        PaletteEntry(key.palette[0], f"{key.palette[1]} ({key_display(key.binding_ids[0])})",
                     binding_id=key.binding_ids[0])
        for key in KEYS
        if key.palette is not None
    ]
    entries += [
        PaletteEntry(command.palette[0], f"{command.palette[1]} (/{command.name})", slash=command.name)
        for command in SLASH_COMMANDS
        if command.palette is not None
    ]
    return entries


def keys_table(key_display: Callable[[str], str]) -> str:
    """The keys of /help, one short line each, with each binding's key as the keymap has it now."""
    rows = []
    for key in KEYS:
        keys = " / ".join(key_display(binding_id) for binding_id in key.binding_ids)
        rows.append(f"- `{keys}`{key.when} {key.does}")
    return "\n".join(rows)


async def _help(app: CommandHost, arg: str) -> None:
    commands = "\n".join(f"- `/{c.name}` — {c.help}" for c in SLASH_COMMANDS)
    custom = custom_slash_commands(app.session)
    listed = ""
    if custom:
        listed = "\n**Project commands** (`.claude/commands`)\n\n" + "\n".join(
            f"- `/{c.name}` — {_cell(c.help)}" for c in custom
        ) + "\n"
    if prompts := mcp_slash_commands(app.session):
        listed += "\n**MCP prompts**\n\n" + "\n".join(f"- `/{c.name}` — {_cell(c.help)}" for c in prompts) + "\n"
    await app.show_markdown(HELP.format(keys=keys_table(app.key_display), commands=commands, custom=listed))


HELP = """\
**Keys**

{keys}

**Commands**

{commands}
{custom}
`@path` attaches a file to the prompt (it is read with the Read tool first); `@server:uri` an MCP
server's resource.
"""


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


async def _init(app: CommandHost, arg: str) -> None:
    # As Claude Code's /init: the model analyses the repository with its tools and writes the file.
    app.submit_prompt(INIT_PROMPT + (f"\n\nAlso: {arg}" if arg else ""))


async def _clear(app: CommandHost, arg: str) -> None:
    await app.clear_conversation()


async def _model(app: CommandHost, arg: str) -> None:
    model = app.session.model
    if not arg:
        offline = " — the offline demo model; set ANTHROPIC_API_KEY to talk to Claude" if model.offline else ""
        lines = [f"Model: {model.label}{offline} · context window {format_tokens(app.session.context_window)}"]
        available = await app.session.list_models()
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
    # The header follows the session's `model_changed`.
    app.session.set_model(arg)
    app.say(f"Model set to {arg}")


async def _cost(app: CommandHost, arg: str) -> None:
    from ..engine import format_usd

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


async def _permissions(app: CommandHost, arg: str) -> None:
    """`/permissions` lists the rules by source, numbered; `/permissions remove N` drops one;
    `/permissions MODE` sets the mode."""
    session = app.session
    word, _, rest = arg.partition(" ")
    if word == "remove":
        entries = session.permission_rules()
        try:
            entry = entries[int(rest) - 1]
        except (ValueError, IndexError):
            app.say(f"No rule number {rest!r}; /permissions lists them.", kind="error")
            return
        try:
            session.remove_permission_rule(entry)
        except (KeyError, OSError, ValueError) as exc:
            app.say(f"Could not remove {entry.rule}: {exc}", kind="error")
            return
        where = f" and from {entry.path}" if entry.path else ""
        app.say(f"Removed {entry.behavior} rule {entry.rule} ({entry.source}){where}.")
        return
    if arg:
        if arg not in MODES:
            app.say(f"Unknown mode {arg!r}; one of: {', '.join(MODES)}", kind="error")
            return
        session.set_permission_mode(arg)
    lines = [f"**Permission mode:** `{session.permission_mode}` (Shift+Tab cycles default → acceptEdits → plan)", ""]
    entries = session.permission_rules()
    if not entries:
        lines.append("No rules: read-only tools run, everything else asks.")
    else:
        lines += ["| # | rule | decision | source |", "| --- | --- | --- | --- |"]
        for n, entry in enumerate(entries, 1):
            lines.append(f"| {n} | `{entry.rule}` | {entry.behavior} | {entry.source} |")
        lines += ["", "`/permissions remove N` removes a rule (also from its settings file)."]
    await app.show_markdown("\n".join(lines))


async def _compact(app: CommandHost, arg: str) -> None:
    await app.compact_conversation(arg)


async def _context(app: CommandHost, arg: str) -> None:
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


async def _config(app: CommandHost, arg: str) -> None:
    settings = app.settings
    lines = ["| key | value | from |", "| --- | --- | --- |"]
    for row in settings.effective():
        value = json.dumps(row.value, ensure_ascii=False) if not isinstance(row.value, str) else row.value
        lines.append(f"| `{row.key}` | {_cell(value)} | {row.source} |")
    for problem in settings.problems:
        lines.append(f"\n**Problem:** {problem}")
    await app.show_markdown("\n".join(lines))


async def _memory(app: CommandHost, arg: str) -> None:
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
    for problem in memory.problems:
        lines.append(f"\n**Problem:** {problem}")
    lines.append("\n`/memory reload` reads them again.")
    await app.show_markdown("\n".join(lines))


async def _mcp(app: CommandHost, arg: str) -> None:
    servers = app.session.mcp_statuses()
    if not servers:
        app.say("No MCP servers configured (mcpServers in settings, or --mcp-config).")
        return
    lines = []
    for server in servers:
        lines.append(f"**{server.name}** · {server.state} · {server.transport} `{_cell(server.target)}`")
        if server.error:
            lines.append(f"> {server.error.splitlines()[0] if server.error else ''}")
        for tool in server.tools:
            flag = " (read-only)" if tool.read_only else ""
            lines.append(f"- `mcp__{server.name}__{tool.name}`{flag} — {_cell(tool.description or '')[:100]}")
        for prompt in (p for p in app.session.mcp_prompts() if p.server == server.name):
            usage = f"/{prompt.command} {prompt.argument_hint}".strip()
            lines.append(f"- `{usage}` — {_cell(prompt.description)[:100]} (prompt)")
        resources = [r for r in app.session.mcp_resources() if r.server == server.name]
        if resources:
            lines.append(f"- {len(resources)} resource{'s' if len(resources) > 1 else ''}: "
                         + ", ".join(f"`@{server.name}:{r.uri}`" for r in resources[:5])
                         + (", …" if len(resources) > 5 else ""))
        lines.append("")
    await app.show_markdown("\n".join(lines))


async def _resume(app: CommandHost, arg: str) -> None:
    from ..engine import SessionNotFound

    if app.session.running:
        app.say("A turn is running: press Esc first, then /resume.", kind="error")
        return
    sessions = [s for s in app.session.stored_sessions() if s.session_id != app.session.session_id]
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
        app.session.resume(target)
    except SessionNotFound:
        app.say(f"No stored session matches {arg!r}; /resume lists them.", kind="error")
        return
    await app.clear_view()
    await app.load_history(app.session.replay_events())
    app.session.prepare_history()  # its first request's work on the history, in a thread now
    if app.session.fork_notice:
        app.say(app.session.fork_notice, kind="error")
    app.refresh_header()
    app.say(f"Resumed session {app.session.session_id[:8]} ({len(app.session.history)} messages).")


async def _bashes(app: CommandHost, arg: str) -> None:
    shells = app.session.background_shells
    words = arg.split()
    if words[:1] == ["kill"]:
        if len(words) != 2 or words[1] not in shells:
            app.say(f"/bashes kill ID stops one; the IDs: {', '.join(shells) or 'none'}.", kind="error")
            return
        shell = shells[words[1]]
        if shell.exit_code is None:
            await shell.stop()
        app.say(f"Stopped {shell.id}: {shell.command}")
        return
    if not shells:
        app.say("No background commands: Bash's run_in_background starts one, and Ctrl+B sends a running one there.")
        return
    lines = ["| id | state | command | output |", "| --- | --- | --- | --- |"]
    for shell in shells.values():
        state = "running" if shell.exit_code is None else f"exited {shell.exit_code}"
        lines.append(f"| `{shell.id}` | {state} | `{_cell(shell.command)[:60]}` | "
                     f"{_cell(shown_path(str(shell.output_path), app.session.cwd))} |")
    lines.append("\n`/bashes kill ID` stops one.")
    await app.show_markdown("\n".join(lines))


async def _rewind(app: CommandHost, arg: str) -> None:
    from .rewind import choose_and_rewind

    await choose_and_rewind(app)  # type: ignore[arg-type]  # the app itself: it shows screens


async def _skills(app: CommandHost, arg: str) -> None:
    skills = getattr(app.session, "skills", {})
    if not skills:
        app.say("No skills: a skill is a folder with a SKILL.md in .claude/skills/, .agent-tui/skills/ "
                "or ~/.claude/skills/.")
        return
    lines = ["| skill | description | from | allowed tools |", "| --- | --- | --- | --- |"]
    for skill in skills.values():
        where = shown_path(str(skill.path), app.session.cwd)
        lines.append(f"| `{_cell(skill.name)}` | {_cell(skill.description)} | {_cell(where)} | "
                     f"{_cell(', '.join(skill.allowed_tools))} |")
    lines.append("\nThe model loads a skill with the Skill tool when its description fits the task.")
    await app.show_markdown("\n".join(lines))


async def _todos(app: CommandHost, arg: str) -> None:
    todos = app.session.todos
    if not todos:
        app.say("No plan yet: the agent writes one with TodoWrite for multi-step work.")
        return
    marks = {"completed": "☑", "in_progress": "◐", "pending": "☐"}
    await app.show_markdown("\n".join(f"- {marks.get(t.get('status'), '☐')} {t.get('content', '')}" for t in todos))


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


async def _theme(app: CommandHost, arg: str) -> None:
    """No name: the themes, the current one marked. A name: use it from now on (the user settings
    keep it for the next start)."""
    if not arg:
        names = sorted(app.available_themes)
        rows = [f"- {'●' if name == app.theme else '○'} `{name}`{' (current)' if name == app.theme else ''}"
                for name in names]
        await app.show_markdown("**Themes** (`/theme NAME` switches and remembers it)\n\n" + "\n".join(rows))
        return
    if arg not in app.available_themes:
        app.say(f"Unknown theme {arg!r}; one of: {', '.join(sorted(app.available_themes))}", kind="error")
        return
    app.theme = arg
    from ..config import save_user_setting

    try:
        written = save_user_setting("theme", arg)
    except OSError as exc:
        app.say(f"Theme: {arg} (not remembered: {exc})", kind="error")
        return
    app.say(f"Theme: {arg} (remembered in {shown_path(written, app.session.cwd)})")


async def _transcript(app: CommandHost, arg: str) -> None:
    app.action_show_transcript()


async def _export(app: CommandHost, arg: str) -> None:
    """`/export FILE` writes there; `/export clipboard` copies; with neither, it asks which (nothing
    lands in the project unasked)."""
    if not arg:
        name = f"agent-tui-{app.session.session_id[:8]}.md"
        await app.show_markdown(
            "**Export the conversation as Markdown**\n\n"
            "- `/export clipboard` copies it to the clipboard\n"
            f"- `/export FILE` writes it to FILE (for example `/export ~/{name}`)")
        return
    if arg.strip().lower() == "clipboard":
        text = app.transcript_markdown()
        app.copy_to_clipboard(text)
        app.say(f"Conversation copied to the clipboard ({len(text):,} characters)")
        return
    target = Path(arg).expanduser()
    if not target.is_absolute():
        target = app.session.cwd / target
    written = app.export_transcript(target)
    if written is not None:
        app.say(f"Conversation written to {written}")


async def _exit(app: CommandHost, arg: str) -> None:
    await app.action_quit()


SLASH_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "Keys and commands", _help, palette=("Help", "Keys and commands")),
    SlashCommand("clear", "Start a new conversation (forgets the history)", _clear,
                 palette=("Clear conversation", "Start over; forgets the history")),
    SlashCommand("model", "Show the model; /model NAME switches to another", _model),
    SlashCommand("cost", "Tokens used and time spent in this session", _cost,
                 palette=("Usage", "Tokens and time of this session")),
    SlashCommand("permissions", "Mode and rules; /permissions MODE sets the mode", _permissions),
    SlashCommand("theme", "List the themes; /theme NAME sets and remembers one", _theme),
    SlashCommand("compact", "Summarise the conversation to free context: /compact [instructions]", _compact),
    SlashCommand("context", "What fills the context window", _context),
    SlashCommand("config", "Effective settings and where each came from", _config),
    SlashCommand("memory", "Project memory files loaded (AGENTS.md, CLAUDE.md)", _memory),
    SlashCommand("init", "Analyse the repository and write an AGENTS.md for coding agents", _init),
    SlashCommand("mcp", "MCP servers, their state and tools", _mcp),
    SlashCommand("resume", "List stored sessions; /resume N or ID continues one", _resume),
    SlashCommand("todos", "The agent's current plan", _todos),
    SlashCommand("bashes", "Background commands; /bashes kill ID stops one", _bashes),
    SlashCommand("rewind", "Go back to before a prompt: code, conversation or both (Esc Esc)", _rewind),
    SlashCommand("skills", "Skills the model can load (.claude/skills, ~/.claude/skills)", _skills),
    SlashCommand("transcript", "The whole conversation, including pruned entries", _transcript,
                 palette=("Show transcript", "The whole conversation")),
    SlashCommand("export", "The conversation as Markdown: /export clipboard or /export FILE", _export,
                 palette=("Export transcript", "Write the conversation as Markdown")),
    SlashCommand("exit", "Quit agent-tui", _exit),
)
_BY_NAME = {command.name: command for command in SLASH_COMMANDS}

KEYS: tuple[KeyCommand, ...] = (
    KeyCommand(("input.submit",), "send (queued while a turn runs)"),
    KeyCommand(("input.newline",), "newline (so does \\\\ then Enter)"),
    KeyCommand(("input.history_previous", "input.history_next"), "prompt history"),
    KeyCommand(("input.paste",), "paste (an image in the clipboard is attached)"),
    KeyCommand(("app.abort",), "stop the turn or `/compact`", palette=("Stop", "Stop the running turn")),
    KeyCommand(("app.interrupt",), "stop; twice quits"),
    KeyCommand(("app.quit",), "quit"),
    KeyCommand(("app.cycle_mode",), "permission mode",
               palette=("Cycle permission mode", "default → acceptEdits → plan")),
    KeyCommand(("app.toggle_timeline",), "show / hide the timeline",
               palette=("Toggle timeline", "Show or hide the tool timeline")),
    KeyCommand(("input.page_up", "input.page_down"), "scroll the transcript"),
    KeyCommand(("input.home", "input.end"), "transcript top / bottom (input empty)"),
    KeyCommand(("app.interrupt",), "copy (OSC 52)", when=" with text selected"),
    KeyCommand(("app.expand_output",), "open the latest output; ↑ / ↓ then walk the tool rows",
               palette=("Expand output", "Expand or collapse the latest tool output or thinking")),
    KeyCommand(("app.command_palette",), "command palette"),
    KeyCommand(("permission.allow", "permission.allow_always", "permission.deny", "permission.feedback"),
               "answer a permission prompt"),
)
