"""What front ends ask of a session besides running prompts (docs/architecture.md §5).

`Session` inherits these: subscribing to its bus, the permission rules as `/permissions` lists
them, custom commands, the model's list of models, stored sessions and the events that redraw
one, the blocks of `@`-attached files.  A front end calls them instead of reaching into the
policy, the bus, the store or the tools, so the engine's internals can change behind them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..tools.base import ToolResult
from ..tools.skill import SkillDefinition, skills_block
from ..tools.structured_output import STATE_KEY as STRUCTURED_STATE
from . import events as ev
from .claude_files import CustomCommand, find_command
from .messages import ATTACHMENT_CALL, ATTACHMENT_RESULT
from .store import SessionInfo, list_sessions, load_transcript, replay_events

if TYPE_CHECKING:
    from ..tools.base import Tool, ToolContext
    from .bus import EventBus, Subscription
    from .mcp import McpManager, McpServerStatus, SdkRelay
    from .models.base import ModelClient
    from .permissions.policy import PermissionPolicy, RuleEntry
    from .store import Transcript, TranscriptStore


class FrontDoor:
    """The front ends' side of `Session` (a mixin: the attributes below are the session's)."""

    bus: EventBus
    policy: PermissionPolicy
    model: ModelClient
    cwd: Path
    tools: list[Tool]
    custom_commands: dict[str, CustomCommand]
    store: TranscriptStore | None
    transcript: Transcript | None
    sdk_mcp_relay: SdkRelay | None
    skills: dict[str, SkillDefinition]
    system_prompt: str
    tool_state: dict[str, Any]
    mcp: McpManager | None
    make_context: Callable[[str], ToolContext]

    # ---------------------------------------------------------------- the bus

    def subscribe(self, name: str) -> Subscription:
        """A queue of every event from now on (`close()` it when done)."""
        return self.bus.subscribe(name)

    def add_listener(self, listener: Callable[[ev.Event], Any]) -> Callable[[], None]:
        """Call `listener` with every event, synchronously, as it is published; returns what removes it."""
        return self.bus.add_listener(listener)

    # ---------------------------------------------------------------- permissions

    @property
    def permission_mode(self) -> str:
        return self.policy.mode

    def permission_rules(self) -> list[RuleEntry]:
        """The active rules, grouped by source in the order the sources were added (`/permissions`)."""
        return [entry for entries in self.policy.entries_by_source().values() for entry in entries]

    def add_permission_rule(self, rule: str, behavior: str = "allow") -> RuleEntry:
        """A rule for this session only (a program's `updatedPermissions`); ValueError when malformed."""
        return self.policy.add_rule(rule, behavior, source="session")

    def remove_permission_rule(self, entry: RuleEntry) -> None:
        """Stop applying `entry`, deleting it from its settings file too (KeyError, OSError, ValueError)."""
        self.policy.remove_rule(entry)

    def add_directory(self, directory: Path | str) -> Path:
        """A further working directory (reads allowed, edits in acceptEdits), as `--add-dir`."""
        return self.policy.add_directory(directory)

    # ---------------------------------------------------------------- commands and models

    def find_command(self, text: str) -> tuple[CustomCommand, str] | None:
        """The custom command `text` runs (`/name args`) and its arguments; None when it names none."""
        return find_command(self.custom_commands, text)

    async def list_models(self) -> list[str]:
        """The models the provider offers (empty when it cannot say)."""
        return await self.model.list_models()

    def mcp_statuses(self) -> list[McpServerStatus]:
        """The MCP servers as they stand (connecting, connected, failed) and their tools; [] before any."""
        return self.mcp.servers() if self.mcp is not None else []

    @property
    def background_shells(self) -> dict[str, Any]:
        """The background commands by id (`/bashes`): each with its command, state, log and `stop()`."""
        return dict(self.tool_state.get("background_shells", {}))

    @property
    def structured_output(self) -> Any:
        """With `--json-schema`: what the model gave StructuredOutput in the last prompt (None: nothing)."""
        return self.tool_state.get(STRUCTURED_STATE)

    def limit_skills(self, names: Iterable[str]) -> list[str]:
        """Keep only the skills named (a program's `skills` allowlist): the system prompt lists only
        those and the Skill tool loads only those.  The names that match no skill, sorted."""
        wanted = set(names)
        kept = {name: skill for name, skill in self.skills.items() if name in wanted}
        listed = "\n\n" + skills_block(self.skills) if self.skills else ""
        if listed and listed in self.system_prompt:
            self.system_prompt = self.system_prompt.replace(listed, "\n\n" + skills_block(kept) if kept else "", 1)
        self.skills = kept
        return sorted(wanted - set(kept))

    def set_sdk_mcp_relay(self, relay: SdkRelay | None) -> None:
        """Where `"type": "sdk"` MCP servers are reached (the Agent SDK transport relays them)."""
        self.sdk_mcp_relay = relay

    # ---------------------------------------------------------------- stored sessions

    @property
    def persisted(self) -> bool:
        """Whether the conversation is written to a transcript (and can be resumed)."""
        return self.store is not None

    def close_transcript(self) -> None:
        """Flush and close the transcript, releasing the session's lock, when the process must end
        before the session's own shutdown; from any thread."""
        if self.store is not None:
            self.store.close()

    def stored_sessions(self) -> list[SessionInfo]:
        """The conversations stored for this directory, newest first."""
        return list_sessions(self.cwd)

    def replay_events(self, *, stored: bool = False) -> list[ev.Event]:
        """The events that draw this conversation in a view: of the transcript `resume()` loaded, or
        (`stored`) of the transcript file as it is now (after a rewind).  Never published: the store
        would write them again."""
        if stored:
            path = self.store.path if self.store is not None else None
            return replay_events(load_transcript(path)) if path is not None and path.exists() else []
        return replay_events(self.transcript) if self.transcript is not None else []

    # ---------------------------------------------------------------- attachments

    async def attachment_blocks(self, files: Sequence[Path]) -> list[dict[str, Any]]:
        """`@`-attached files as the user message's leading blocks: each file's Read call and result,
        marked so views and exports show them as attachments (engine/messages.py)."""
        out: list[dict[str, Any]] = []
        read = next((t for t in self.tools if t.name == "Read"), None)
        for path in files:
            call = {"file_path": str(path)}
            result = await self._read_attachment(read, call) if read is not None else _plain_read(path)
            out.append({"type": "text", "text": ATTACHMENT_CALL + json.dumps(call)})
            if isinstance(result, str):
                out.append({"type": "text", "text": ATTACHMENT_RESULT + result})
                continue
            for block in result:
                # An image or document goes as is; text (an image's "could not be sent" note keeps its mark).
                is_text = block.get("type") == "text"
                out.append({**block, "text": ATTACHMENT_RESULT + block.get("text", "")} if is_text else block)
        return out

    async def _read_attachment(self, tool: Tool, call: dict[str, Any]) -> str | list[dict[str, Any]]:
        result: ToolResult | None = None
        async for item in tool.call(call, self.make_context("attachment")):
            if isinstance(item, ToolResult):
                result = item
        return "(no result)" if result is None else result.content


def _plain_read(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return f"Could not read {path}: {exc}"
    return "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, 1))
