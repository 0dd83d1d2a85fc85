"""The whole conversation as Markdown, from the engine's history.

The transcript widget prunes old entries; the history never loses any, so
this is what `/transcript` shows and `/export` writes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..engine import ATTACHMENT_CALL, blocks, is_attachment

if TYPE_CHECKING:
    from ..engine import Message


def _fence(text: str, info: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{info}\n{text}\n{fence}"


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _attachment_label(block: dict[str, Any]) -> str | None:
    """`@path` for the call block of an @-attachment; None for its result block."""
    text = block.get("text", "")
    if not text.startswith(ATTACHMENT_CALL):
        return None
    try:
        return "@" + str(json.loads(text[len(ATTACHMENT_CALL):]).get("file_path", "?"))
    except ValueError:
        return "@?"


def history_markdown(history: list[Message], title: str = "") -> str:
    """One `## › User` or `## Assistant` section per turn of the conversation; tool
    results (which the API carries in user messages) stay under the assistant's turn."""
    out: list[str] = [f"# {title}\n"] if title else []
    speaker = ""

    def section(name: str) -> None:
        nonlocal speaker
        if speaker != name:
            speaker = name
            out.append("## › User" if name == "user" else "## Assistant")

    for message in history:
        role = message.get("role")
        for block in blocks(message):
            kind = block.get("type")
            if kind == "text" and role == "user":
                if is_attachment(block):
                    label = _attachment_label(block)
                    if label is not None:
                        section("user")
                        out.append(f"⎿ attached {label}")
                    continue
                section("user")
                out.append(block.get("text", ""))
            elif kind == "text":
                section("assistant")
                out.append(block.get("text", ""))
            elif kind == "thinking":
                section("assistant")
                quoted = "\n".join("> " + line for line in block.get("thinking", "").splitlines())
                out.append("> ✻ *Thinking*\n>\n" + quoted)
            elif kind == "tool_use":
                section("assistant")
                args = json.dumps(block.get("input", {}), indent=2, ensure_ascii=False)
                out.append(f"**● {block.get('name')}** `{block.get('id')}`\n\n" + _fence(args, "json"))
            elif kind == "tool_result":
                label = "error" if block.get("is_error") else "result"
                out.append(f"⎿ *{label}* `{block.get('tool_use_id')}`\n\n" + _fence(_result_text(block)))
    return "\n\n".join(out) + "\n"
