"""Claude Code's project files, read so a Claude Code project works unchanged.

- `.claude/commands/**/*.md`: custom slash commands (`/name`, `/dir:name`);
  the body is the prompt, `$ARGUMENTS` / `$1`... take what follows the name, and
  ``!`command` `` spans are replaced by the command's output (engine/command_expansion.py).
- `.claude/agents/*.md`: subagent types for the Agent tool; the body is the
  subagent's system prompt.
- `.mcp.json`: project MCP servers, used once the person approved them
  (`enableAllProjectMcpServers`, `enabledMcpjsonServers`,
  `disabledMcpjsonServers` in the settings, as Claude Code records them).

`.agent-tui/commands` and `.agent-tui/agents` are read the same way and win
over `.claude/` files of the same name.  Front matter is the flat YAML that
these files use: `key: value`, quoted strings, `[a, b]` and `- item` lists,
`|` / `>` blocks.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..tools.agent import AgentDefinition
from .permissions.rules import split_rules

# The project's MCP servers, in Claude Code's file.
MCP_JSON = Path(".mcp.json")


class McpJsonApprovals(Protocol):
    """What the settings recorded about `.mcp.json` servers (the front end passes its `Settings`)."""

    enabled_mcpjson_servers: list[str]
    disabled_mcpjson_servers: list[str]
    enable_all_project_mcp_servers: bool


# Lowest first: a later folder's file of the same name wins.
COMMAND_DIRS = (Path(".claude") / "commands", Path(".agent-tui") / "commands")
AGENT_DIRS = (Path(".claude") / "agents", Path(".agent-tui") / "agents")

# ---------------------------------------------------------------- front matter

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a Markdown file; no front matter -> ({}, text)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    return _parse_mapping(lines[1:end]), "\n".join(lines[end + 1 :]).strip("\n")


def _parse_mapping(lines: list[str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        match = _KEY.match(lines[i])
        i += 1
        if match is None:
            continue
        key, raw = match.group(1), match.group(2).strip()
        nested: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i][:1] in (" ", "\t")):
            nested.append(lines[i])
            i += 1
        if raw in ("|", "|-", ">", ">-"):
            texts = [line.strip() for line in nested]
            data[key] = ("\n" if raw.startswith("|") else " ").join(texts).strip()
        elif not raw and any(line.strip().startswith("- ") for line in nested):
            data[key] = [_scalar(line.strip()[2:]) for line in nested if line.strip().startswith("- ")]
        elif not raw:
            data[key] = " ".join(line.strip() for line in nested).strip()
        else:
            data[key] = _scalar(raw)
    return data


def _scalar(raw: str) -> Any:
    raw = raw.strip()
    if raw.startswith("[") and raw.endswith("]"):
        return [_scalar(part) for part in raw[1:-1].split(",") if part.strip()]
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    if " #" in raw:
        raw = raw.split(" #", 1)[0].rstrip()
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return raw


def _string_list(value: Any) -> list[str]:
    """`"Read, Grep"`, `[Read, Grep]` or `"Bash(git add:*) Read"` -> names/rules."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return split_rules(str(value))


def _markdown_files(root: Path, folders: Iterable[Path]) -> list[tuple[Path, Path]]:
    """(folder, file) for every `*.md` below the folders, lowest folder first."""
    found = []
    for folder in folders:
        base = root / folder
        if base.is_dir():
            found.extend((base, path) for path in sorted(base.rglob("*.md")) if path.is_file())
    return found


def _read(path: Path, problems: list[str]) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot read: {exc}")
        return None


# ---------------------------------------------------------------- custom slash commands


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """A `.claude/commands/<name>.md` file."""

    name: str
    description: str
    body: str
    path: Path
    argument_hint: str = ""
    # Rules allowed without asking while the command's prompt runs.
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None

    @property
    def runs_shell(self) -> bool:
        """Whether the body has ``!`command` `` spans (`Session.expand_command` runs them)."""
        return "!`" in self.body

    def expand(self, arguments: str) -> str:
        """The prompt: `$ARGUMENTS` and `$1`..`$9` replaced; without a placeholder the
        arguments follow the body (as Claude Code appends them)."""
        arguments = arguments.strip()
        try:
            positional = shlex.split(arguments)
        except ValueError:
            positional = arguments.split()
        uses_placeholder = "$ARGUMENTS" in self.body or re.search(r"\$[1-9]", self.body) is not None
        text = self.body.replace("$ARGUMENTS", arguments)
        text = re.sub(r"\$([1-9])", lambda m: positional[int(m.group(1)) - 1] if int(m.group(1)) <= len(positional)
                      else "", text)
        if arguments and not uses_placeholder:
            text = f"{text}\n\nARGUMENTS: {arguments}"
        return text


def load_commands(cwd: Path, problems: list[str] | None = None) -> dict[str, CustomCommand]:
    """The project's custom commands by name (`sub/dir/x.md` is `/sub:dir:x`)."""
    problems = problems if problems is not None else []
    commands: dict[str, CustomCommand] = {}
    for folder, path in _markdown_files(cwd, COMMAND_DIRS):
        text = _read(path, problems)
        if text is None:
            continue
        meta, body = split_front_matter(text)
        name = ":".join(path.relative_to(folder).with_suffix("").parts)
        first_line = next((line.strip().lstrip("#").strip() for line in body.splitlines() if line.strip()), "")
        model = meta.get("model")
        commands[name] = CustomCommand(
            name=name,
            description=str(meta.get("description") or first_line[:80]),
            body=body,
            path=path,
            argument_hint=str(meta.get("argument-hint") or ""),
            allowed_tools=tuple(_string_list(meta.get("allowed-tools"))),
            model=str(model) if model else None,
        )
    return commands


def find_command(commands: Mapping[str, CustomCommand], text: str) -> tuple[CustomCommand, str] | None:
    """`"/review src"` -> (the `review` command, "src"); None when `text` names no custom command."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, arguments = stripped[1:].partition(" ")
    command = commands.get(name)
    return (command, arguments.strip()) if command is not None else None


# ---------------------------------------------------------------- subagent types


def load_agents(cwd: Path, problems: list[str] | None = None) -> dict[str, AgentDefinition]:
    """The project's subagent types by name; a file without a description is skipped (and reported)."""
    problems = problems if problems is not None else []
    agents: dict[str, AgentDefinition] = {}
    for _folder, path in _markdown_files(cwd, AGENT_DIRS):
        text = _read(path, problems)
        if text is None:
            continue
        meta, body = split_front_matter(text)
        name = str(meta.get("name") or path.stem).strip()
        description = str(meta.get("description") or "").strip()
        if not description:
            problems.append(f"{path}: an agent needs a `description` in its front matter; skipped")
            continue
        tools = _string_list(meta.get("tools")) if "tools" in meta else None
        model = str(meta["model"]).strip() if meta.get("model") else None
        agents[name] = AgentDefinition(
            name=name,
            description=description,
            system_prompt=body.strip(),
            tools=tuple(tools) if tools else None,
            model=None if model == "inherit" else model,
            path=path,
        )
    return agents


# ---------------------------------------------------------------- .mcp.json


def load_mcp_json(cwd: Path, problems: list[str] | None = None) -> dict[str, Any]:
    """The servers of the project's `.mcp.json` (`{"mcpServers": {...}}`); {} when there is none."""
    problems = problems if problems is not None else []
    path = cwd / MCP_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        problems.append(f"{MCP_JSON}: not readable as JSON ({exc}); its servers are not used")
        return {}
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        problems.append(f'{MCP_JSON}: expected an object with "mcpServers"; its servers are not used')
        return {}
    return {name: entry for name, entry in servers.items() if isinstance(entry, dict)}


def mcp_json_state(name: str, settings: McpJsonApprovals) -> str:
    """"approved", "rejected" or "pending" (nobody has been asked yet) for a `.mcp.json` server."""
    if name in settings.disabled_mcpjson_servers:
        return "rejected"
    if settings.enable_all_project_mcp_servers:
        return "approved"
    if name in settings.enabled_mcpjson_servers:
        return "approved"
    return "pending"


def split_mcp_json(servers: Mapping[str, Any], settings: McpJsonApprovals) -> tuple[dict[str, Any], dict[str, Any]]:
    """(approved, pending) `.mcp.json` servers; rejected ones are in neither."""
    approved: dict[str, Any] = {}
    pending: dict[str, Any] = {}
    for name, entry in servers.items():
        state = mcp_json_state(name, settings)
        if state == "approved":
            approved[name] = entry
        elif state == "pending":
            pending[name] = entry
    return approved, pending


def record_mcp_json_choice(settings_path: Path, names: Iterable[str], choice: str) -> None:
    """Remember the person's answer in a settings file (the local one), as Claude Code does:
    "all" -> enableAllProjectMcpServers, "approve" -> enabledMcpjsonServers, "reject" -> disabledMcpjsonServers."""
    try:
        data = json.loads(settings_path.read_text(encoding="utf-8")) if settings_path.exists() else {}
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    key = "disabledMcpjsonServers" if choice == "reject" else "enabledMcpjsonServers"
    listed = data.get(key)
    if not isinstance(listed, list):
        listed = data[key] = []
    listed.extend(name for name in names if name not in listed)
    if choice == "all":
        data["enableAllProjectMcpServers"] = True
    settings_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = settings_path.with_suffix(settings_path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(settings_path)
