"""The whole conversation as Markdown, from the engine's history.

The transcript widget prunes old entries; the history never loses any, so
this is what `/transcript` shows and `/export` writes.
"""

from __future__ import annotations

import json
from typing import Any

from ..engine.messages import Message, blocks


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


def history_markdown(history: list[Message], title: str = "") -> str:
    out: list[str] = [f"# {title}\n"] if title else []
    for message in history:
        role = message.get("role")
        for block in blocks(message):
            kind = block.get("type")
            if kind == "text" and role == "user":
                out.append("## › User\n\n" + block.get("text", ""))
            elif kind == "text":
                out.append(block.get("text", ""))
            elif kind == "thinking":
                out.append("> ✻ *Thinking*\n>\n" + "\n".join("> " + line for line in block.get("thinking", "").splitlines()))
            elif kind == "tool_use":
                args = json.dumps(block.get("input", {}), indent=2, ensure_ascii=False)
                out.append(f"**● {block.get('name')}** `{block.get('id')}`\n\n" + _fence(args, "json"))
            elif kind == "tool_result":
                label = "error" if block.get("is_error") else "result"
                out.append(f"⎿ *{label}* `{block.get('tool_use_id')}`\n\n" + _fence(_result_text(block)))
    return "\n\n".join(out) + "\n"
