"""Prompt caching: where a request's `cache_control` breakpoints go.

The prefix the API caches is tools -> system -> messages.  Breakpoints, at
most `MAX_BREAKPOINTS` as the API allows:

1. the last tool definition (the tools change only when MCP servers connect);
2. the first system block (the static prompt) and the last one (memory files,
   appended instructions), which change only when the files do;
3. the last block of the newest message, moving every request, so the
   whole conversation so far is read from the cache on the next one.

The history is never modified: the blocks that carry a breakpoint are copies.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
# Block types the API refuses a cache_control on.
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


def system_text(system: str | list[dict[str, Any]]) -> str:
    """The system prompt as one string (for servers that take no blocks)."""
    if isinstance(system, str):
        return system
    return "\n\n".join(b.get("text", "") for b in system if b.get("type") == "text")


def cached_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not tools:
        return tools
    return [*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}]


def cached_system(system: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else [dict(b) for b in system]
    blocks = [b for b in blocks if b.get("type") != "text" or b.get("text")]
    if blocks:
        blocks[0]["cache_control"] = EPHEMERAL
        blocks[-1]["cache_control"] = EPHEMERAL
    return blocks


def cached_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with a breakpoint on the last cacheable block of the newest message."""
    if not messages:
        return messages
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, str):
        if not content:
            return messages
        content = [{"type": "text", "text": content}]
    content = list(content or [])
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        if block.get("type") in _UNCACHEABLE or (block.get("type") == "text" and not block.get("text")):
            continue
        content[index] = {**block, "cache_control": EPHEMERAL}
        return [*messages[:-1], {**last, "content": content}]
    return messages


def count_breakpoints(body: dict[str, Any]) -> int:
    """How many cache_control markers a request body carries (tests and a guard)."""
    count = sum("cache_control" in t for t in body.get("tools", []))
    system = body.get("system")
    if isinstance(system, list):
        count += sum("cache_control" in b for b in system)
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            count += sum("cache_control" in b for b in content)
    return count
