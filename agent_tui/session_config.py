"""`SessionConfig`: what a program asks of a session, typed and built once on the front-end side.

`agent-tui`'s flags and `agent_tui.ask()`'s options mean the same things; `build()` makes the
session the command line would (settings layers, memory files, tools, MCP servers, the transcript).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Session


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionConfig:
    cwd: Path
    model: str | None = None
    permission_mode: str | None = None
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    max_turns: int | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    mcp_servers: Mapping[str, Any] | None = field(default=None, compare=False)
    offline: bool = False
    # The answer must also be JSON matching this schema (an object): `Result.structured_output`.
    json_schema: Mapping[str, Any] | None = field(default=None, compare=False)
    # Undecided tool calls publish `permission_requested` for the caller to answer; else they are denied.
    interactive: bool = False

    @classmethod
    def from_options(cls, *, cwd: Path, allowed_tools: Sequence[str] = (), disallowed_tools: Sequence[str] = (),
                     **options: Any) -> SessionConfig:
        return cls(cwd=Path(cwd).resolve(), allowed_tools=tuple(allowed_tools),
                   disallowed_tools=tuple(disallowed_tools), **options)

    def argv(self) -> list[str]:
        """The same request as `agent-tui` flags (one meaning for both front doors)."""
        argv = ["-p"]
        for flag, value in (("--model", self.model), ("--permission-mode", self.permission_mode),
                            ("--max-turns", self.max_turns), ("--system-prompt", self.system_prompt),
                            ("--append-system-prompt", self.append_system_prompt)):
            if value is not None:
                argv.append(f"{flag}={value}")
        for flag, rules in (("--allowedTools", self.allowed_tools), ("--disallowedTools", self.disallowed_tools)):
            if rules:
                argv.append(f"{flag}={','.join(rules)}")
        if self.mcp_servers:
            argv.append("--mcp-config=" + json.dumps({"mcpServers": dict(self.mcp_servers)}))
        if self.offline:
            argv.append("--offline")
        if self.json_schema is not None:
            argv.append("--json-schema=" + json.dumps(dict(self.json_schema)))
        return argv

    def build(self) -> Session:
        """The session; ValueError when the settings or the MCP configuration are invalid."""
        from . import cli
        from .config import SettingsError, load_settings
        from .tools.structured_output import schema_problem

        args = cli.build_parser().parse_args(self.argv())
        if self.json_schema is not None:
            if problem := schema_problem(self.json_schema):
                raise ValueError(f"json_schema: {problem}")
            args.json_schema = dict(self.json_schema)
        try:
            settings = load_settings(self.cwd, flags=cli.flag_settings(args))
        except SettingsError as exc:
            raise ValueError(f"settings: {exc}") from exc
        model = cli.choose_model(settings, args.offline)
        built = cli.build_session(args, self.cwd, settings, model, interactive=self.interactive)
        if isinstance(built, int):
            raise ValueError("the MCP configuration is invalid")
        return built[0]
