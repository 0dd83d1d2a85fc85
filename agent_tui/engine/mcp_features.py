"""What MCP servers offer besides tools, and what the client offers them (docs/architecture.md §5).

- Prompts (`prompts/list`) are slash commands `/mcp__<server>__<prompt> args`: the words after
  the name are the prompt's arguments in their declared order (a quoted value is one word, the
  last argument takes any words left over), and `prompts/get` turns them into the user message.
- Resources are read through the ListMcpResourcesTool / ReadMcpResourceTool tools and attached
  with `@server:uri` mentions in a prompt (as an `@file` is attached: a call and its result).
- Roots: the session's working directories, listed to a server when it asks, and a
  `notifications/roots/list_changed` when they change.
- Elicitation: a server asks the person for values (a JSON-schema form); who answers is the
  front end's to say (the TUI shows a form), otherwise the request is declined.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..tools.mcp import normalize_name, render_result
from .messages import ATTACHMENT_RESOURCE_CALL, ATTACHMENT_RESOURCE_RESULT, Block, text_block

ElicitationAction = Literal["accept", "decline", "cancel"]


class McpPromptError(ValueError):
    """A prompt command that cannot be sent: a missing argument, or the server's error."""


@dataclass(frozen=True, slots=True)
class McpPromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class McpPrompt:
    """One entry of a server's prompts/list, as the slash command it becomes."""

    server: str
    name: str
    description: str = ""
    arguments: tuple[McpPromptArgument, ...] = ()

    @property
    def command(self) -> str:
        """The command's name without the slash (Claude Code's `mcp__server__prompt`)."""
        return f"mcp__{normalize_name(self.server)}__{normalize_name(self.name)}"

    @property
    def argument_hint(self) -> str:
        return " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in self.arguments)

    def bind(self, words: str) -> dict[str, str]:
        """The prompt's arguments from what followed the command (McpPromptError when one it
        requires is missing)."""
        try:
            values = shlex.split(words)
        except ValueError:  # an unclosed quote: the words as they are
            values = words.split()
        names = [a.name for a in self.arguments]
        if len(values) > len(names) and names:
            values = values[: len(names) - 1] + [" ".join(values[len(names) - 1:])]
        bound = dict(zip(names, values, strict=False))
        missing = [a.name for a in self.arguments if a.required and not bound.get(a.name)]
        if missing:
            raise McpPromptError(f"/{self.command} needs {', '.join(missing)} "
                                 f"(usage: /{self.command} {self.argument_hint})")
        return bound


def find_prompt(prompts: Sequence[McpPrompt], text: str) -> tuple[McpPrompt, str] | None:
    """`"/mcp__docs__review python"` -> (that prompt, "python"); None when `text` names none."""
    stripped = text.strip()
    if not stripped.startswith("/mcp__"):
        return None
    name, _, words = stripped[1:].partition(" ")
    found = next((p for p in prompts if p.command == name), None)
    return (found, words.strip()) if found is not None else None


def prompt_blocks(result: Any, label: str) -> list[Block]:
    """The user message a prompts/get result becomes: its messages' text, then their images
    and documents as blocks (an embedded resource's text inline)."""
    contents = [message.content for message in getattr(result, "messages", None) or []]
    rendered = render_result(_Content(contents), label)
    return ([text_block(rendered.text)] if rendered.text else []) + rendered.media


# ---------------------------------------------------------------- resource mentions

RESOURCE_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_.-]+):(\S+)")


def mentioned_resources(text: str, servers: Sequence[str]) -> list[tuple[str, str]]:
    """(server, uri) for each `@server:uri` of `text` naming one of `servers`, in order, once each."""
    found: list[tuple[str, str]] = []
    for match in RESOURCE_MENTION.finditer(text):
        server, uri = match.group(1), match.group(2).rstrip(".,;!?)")
        if server in servers and (server, uri) not in found:
            found.append((server, uri))
    return found


def resource_attachment(server: str, uri: str, content: str | list[Block]) -> list[Block]:
    """A mentioned resource as the model reads it: a ReadMcpResourceTool call and its result."""
    call = text_block(ATTACHMENT_RESOURCE_CALL + json.dumps({"server": server, "uri": uri}))
    if isinstance(content, str):
        return [call, text_block(ATTACHMENT_RESOURCE_RESULT + content)]
    out = [call]
    for block in content:
        is_text = block.get("type") == "text"
        out.append({**block, "text": ATTACHMENT_RESOURCE_RESULT + block["text"]} if is_text else block)
    return out


# ---------------------------------------------------------------- elicitation


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """A server's `elicitation/create`: its message, and the form's JSON schema (form mode) or
    the URL the person is asked to open (URL mode)."""

    server: str
    message: str
    schema: dict[str, Any] = field(default_factory=dict)
    url: str | None = None


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """What goes back: accept (with the form's values), decline, or cancel."""

    action: ElicitationAction
    content: dict[str, Any] | None = None


class McpClientSide(Protocol):
    """What the session gives its servers: the roots, and someone to answer an elicitation."""

    def roots(self) -> list[Any]:
        """The working directories (Paths)."""
        ...

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer: ...


@dataclass(frozen=True, slots=True)
class FormField:
    """One property of an elicitation's schema, as a form shows it."""

    name: str
    title: str
    kind: Literal["string", "number", "integer", "boolean", "enum"]
    description: str = ""
    required: bool = False
    default: Any = None
    # (value, label) of an enum.
    options: tuple[tuple[str, str], ...] = ()
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True, slots=True)
class ElicitationForm:
    """The form an elicitation's JSON schema describes: form mode allows a flat object of strings,
    numbers, integers, booleans and enums (a property of another type is shown as text)."""

    fields: tuple[FormField, ...]

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any]) -> ElicitationForm:
        required = set(schema.get("required") or [])
        fields = []
        for name, spec in (schema.get("properties") or {}).items():
            options = tuple(_enum_options(spec))
            kind = "enum" if options else spec.get("type")
            fields.append(FormField(
                name=name, title=str(spec.get("title") or name),
                kind=kind if kind in ("number", "integer", "boolean", "enum") else "string",
                description=str(spec.get("description") or ""), required=name in required,
                default=spec.get("default"), options=options,
                minimum=spec.get("minimum"), maximum=spec.get("maximum")))
        return cls(tuple(fields))

    def check(self, values: Mapping[str, Any]) -> dict[str, Any] | str:
        """The values typed into the form converted to the schema's types, or what is wrong."""
        out: dict[str, Any] = {}
        for field_ in self.fields:
            raw = values.get(field_.name)
            if raw is None or raw == "":
                if field_.required:
                    return f"{field_.title} is required"
                continue
            checked = _check_value(field_, raw)
            if isinstance(checked, _Problem):
                return checked.text
            out[field_.name] = checked
        return out


@dataclass(frozen=True, slots=True)
class _Problem:
    text: str


def _check_value(field_: FormField, raw: Any) -> Any:
    if field_.kind == "boolean":
        return bool(raw)
    if field_.kind == "enum":
        values = [value for value, _ in field_.options]
        return str(raw) if str(raw) in values else _Problem(f"{field_.title} must be one of {', '.join(values)}")
    if field_.kind not in ("number", "integer"):
        return str(raw)
    try:
        number: float | int = int(str(raw).strip()) if field_.kind == "integer" else float(str(raw).strip())
    except ValueError:
        return _Problem(f"{field_.title} must be {'a whole number' if field_.kind == 'integer' else 'a number'}")
    low, high = field_.minimum, field_.maximum
    if (low is not None and number < low) or (high is not None and number > high):
        return _Problem(f"{field_.title} must be between {'…' if low is None else low} and "
                        f"{'…' if high is None else high}")
    return number


def _enum_options(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(value, label) of an enum property: `enum` (with `enumNames`), or `oneOf` of `const`/`title`."""
    if isinstance(spec.get("enum"), list):
        names = spec.get("enumNames") if isinstance(spec.get("enumNames"), list) else spec["enum"]
        return [(str(v), str(n)) for v, n in zip(spec["enum"], names, strict=False)]
    one_of = spec.get("oneOf")
    if isinstance(one_of, list):
        return [(str(o["const"]), str(o.get("title", o["const"]))) for o in one_of
                if isinstance(o, dict) and "const" in o]
    return []


@dataclass
class _Content:
    """What render_result reads: a list of MCP content blocks."""

    content: list[Any]
    structured_content: Any = None
