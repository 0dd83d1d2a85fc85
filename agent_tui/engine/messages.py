"""Messages and content blocks in the Messages API's own shape (plain dicts).

History is a list of `{"role": ..., "content": [block, ...]}` dicts, so it is
JSON-serialisable as is and goes to the API without conversion.  This module
owns the history invariants of docs/architecture.md §3: `check_history` states them,
`ensure_tool_result_pairing` repairs a broken history as the last line of
defence, and `normalize_for_api` prepares a history for a request.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from .memo import CheckState, common_prefix

if TYPE_CHECKING:
    from .memo import HistoryMemo

Message = dict[str, Any]
Block = dict[str, Any]

MISSING_RESULT = "[Tool result missing due to internal error]"
INTERRUPTED_MESSAGE = "[Request interrupted by user]"
INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
REJECT_MESSAGE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected "
    "(eg. if it was a file edit, the new_string was NOT written to the file). "
    "STOP what you are doing and wait for the user to tell you how to proceed."
)
# Keys the engine keeps on blocks for itself; never sent to the API.
_PRIVATE_KEYS = ("_partial", "_parse_error", "_raw_input", "_image_error")


# Lone surrogates: bytes a file or command gave that are not UTF-8, kept by surrogateescape.
_SURROGATES = re.compile("[\ud800-\udfff]")


def valid_utf8(value: Any) -> Any:
    """`value` (str, or lists and dicts of them) with every lone surrogate replaced by
    U+FFFD, so it encodes as UTF-8: for the API, the transcript and the terminal."""
    if isinstance(value, str):
        return value if value.isascii() else _SURROGATES.sub("\ufffd", value)
    if isinstance(value, list):
        return [valid_utf8(v) for v in value]
    if isinstance(value, dict):
        return {k: valid_utf8(v) for k, v in value.items()}
    return value


# An @-mentioned file rides in the prompt as these two text blocks (Claude Code's wording).
ATTACHMENT_CALL = "Called the Read tool with the following input: "
ATTACHMENT_RESULT = "Result of calling the Read tool:\n"
# An @server:uri mention of an MCP resource, likewise (engine/mcp_features.py).
ATTACHMENT_RESOURCE_CALL = "Called the ReadMcpResourceTool tool with the following input: "
ATTACHMENT_RESOURCE_RESULT = "Result of calling the ReadMcpResourceTool tool:\n"


def is_attachment(block: Block) -> bool:
    text = block.get("text", "") if block.get("type") == "text" else ""
    return text.startswith((ATTACHMENT_CALL, ATTACHMENT_RESULT, ATTACHMENT_RESOURCE_CALL, ATTACHMENT_RESOURCE_RESULT))


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def user_message(content: str | list[Block]) -> Message:
    if isinstance(content, str):
        content = [text_block(content)]
    return {"role": "user", "content": content}


def assistant_message(content: list[Block]) -> Message:
    return {"role": "assistant", "content": content}


def tool_result_block(tool_use_id: str, content: str | list[Block], is_error: bool = False) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def blocks(message: Message) -> list[Block]:
    content = message.get("content")
    if isinstance(content, str):
        return [text_block(content)]
    return list(content or [])


def tool_uses(message: Message) -> list[Block]:
    return [b for b in blocks(message) if b.get("type") == "tool_use"]


def text_of(message: Message) -> str:
    return "".join(b.get("text", "") for b in blocks(message) if b.get("type") == "text")


def _merged(messages: list[Message]) -> list[Message]:
    """Consecutive messages of one role joined, as the API reads them."""
    out: list[Message] = []
    for m in messages:
        if out and out[-1]["role"] == m["role"]:
            out[-1] = {"role": m["role"], "content": blocks(out[-1]) + blocks(m)}
        else:
            out.append({"role": m["role"], "content": blocks(m)})
    return out


def check_history(messages: list[Message]) -> list[str]:
    """Every way `messages` breaks the invariants of docs/architecture.md §3; empty when valid.

    1. After merging, roles alternate and the first message is the user's.
    2. Each tool_use id has exactly one tool_result in the next user message,
       and every tool_result answers a tool_use of the message before it.
    3. (Signatures are checked by comparing histories, not here.)
    """
    return _problems(_merged(messages), 0, set())


def check_history_since(messages: list[Message], state: CheckState) -> list[str]:
    """`check_history(messages)`, checking only from where `messages` departs from the
    history `state` last found valid: the cost of what is new, not of the whole history."""
    return _checked_problems(messages, state)


def _pairing(message: Message) -> tuple[list[Any], list[Any]]:
    """A merged message's tool_use ids and tool_result ids, in block order."""
    content = message["content"]
    return ([b.get("id") for b in content if b.get("type") == "tool_use"],
            [b.get("tool_use_id") for b in content if b.get("type") == "tool_result"])


def _checks_alike(a: Message, b: Message) -> bool:
    """Whether `_problems` reads `a` and `b` alike (so one may stand for the other)."""
    if a["role"] != b["role"] or bool(a["content"]) != bool(b["content"]):
        return False
    return _pairing({"content": blocks(a)}) == _pairing({"content": blocks(b)})


def _problems(merged: list[Message], start: int, seen_ids: set[Any]) -> list[str]:
    """check_history's findings on merged[start:] (merged[:start] known valid, its tool_use ids in `seen_ids`)."""
    problems: list[str] = []
    if not merged:
        return problems
    if start == 0 and merged[0]["role"] != "user":
        problems.append("first message is not from the user")
    for i in range(start, len(merged)):
        m = merged[i]
        if m["role"] not in ("user", "assistant"):
            problems.append(f"message {i} has role {m['role']!r}")
        if not m["content"]:
            problems.append(f"message {i} ({m['role']}) is empty")
    for i in range(start, len(merged)):
        m = merged[i]
        if m["role"] == "assistant":
            ids = _pairing(m)[0]
            for tid in ids:
                if tid in seen_ids:
                    problems.append(f"tool_use id {tid} appears twice")
                seen_ids.add(tid)
            nxt = merged[i + 1] if i + 1 < len(merged) else None
            if ids and nxt is None:
                # A history may end on an assistant turn with tools still to run only
                # mid-turn; a stored or sent history must not.
                problems.append(f"message {i}: tool_use {ids} has no following user message")
                continue
            results = _pairing(nxt)[1] if nxt is not None else []
            for tid in ids:
                n = results.count(tid)
                if n == 0:
                    problems.append(f"message {i}: tool_use {tid} has no tool_result")
                elif n > 1:
                    problems.append(f"message {i}: tool_use {tid} has {n} tool_results")
            for rid in results:
                if rid not in ids:
                    problems.append(f"message {i + 1}: tool_result {rid} answers no tool_use")
        elif m["role"] == "user":
            prev = merged[i - 1] if i > 0 else None
            if prev is None or prev["role"] != "assistant":
                for rid in _pairing(m)[1]:
                    problems.append(f"message {i}: tool_result {rid} answers no tool_use")
    return problems


def ensure_tool_result_pairing(messages: list[Message]) -> list[Message]:
    """Repair a history so that every tool_use has exactly one tool_result.

    Missing results become `is_error` results; orphan and duplicate results are
    dropped; a user message left empty is dropped.  Returns a new list.
    """
    merged = _merged(messages)
    out: list[Message] = []
    i = 0
    while i < len(merged):
        m = merged[i]
        if m["role"] == "assistant":
            content = [b for b in m["content"] if not b.get("_partial")]
            if not content:
                i += 1
                continue
            out.append({"role": "assistant", "content": content})
            ids = [b["id"] for b in content if b.get("type") == "tool_use"]
            nxt = merged[i + 1] if i + 1 < len(merged) and merged[i + 1]["role"] == "user" else None
            rest = nxt["content"] if nxt is not None else []
            by_id: dict[str, Block] = {}
            others: list[Block] = []
            for b in rest:
                if b.get("type") == "tool_result":
                    if b.get("tool_use_id") in ids and b["tool_use_id"] not in by_id:
                        by_id[b["tool_use_id"]] = b
                else:
                    others.append(b)
            if ids or nxt is not None:
                results = [
                    by_id.get(tid) or tool_result_block(tid, MISSING_RESULT, is_error=True) for tid in ids
                ]
                new_content = results + others
                if new_content:
                    out.append({"role": "user", "content": new_content})
            i += 2 if nxt is not None else 1
        else:
            content = [b for b in m["content"] if b.get("type") != "tool_result"]
            if content:
                out.append({"role": "user", "content": content})
            i += 1
    # Consecutive user messages can appear after dropping an empty assistant turn.
    return _merged(out)


def strip_private(block: Block) -> Block:
    if any(k in block for k in _PRIVATE_KEYS):
        return {k: v for k, v in block.items() if k not in _PRIVATE_KEYS}
    return block


def normalize_for_api(messages: list[Message], memo: HistoryMemo | None = None) -> list[Message]:
    """The history as a request carries it: roles merged, engine-private keys, empty text
    blocks and unsigned thinking removed, tool pairing guaranteed.  Input is not mutated.

    With a `memo` (engine/memo.py), each message is cleaned once and the same object comes
    back for it on every later request, and only what follows the history last found valid
    is checked: the cost is the new messages', not the history's."""
    if memo is None:
        cleaned = [c for c in map(_api_form, messages) if c is not None]
        if check_history(cleaned):
            cleaned = ensure_tool_result_pairing(cleaned)
        return cleaned
    forms = list(filter(None, memo.api_form.map(messages, _api_form)))
    if _checked_problems(forms, memo.check):
        return ensure_tool_result_pairing(forms)
    # A trailing assistant message would be read as a prefill; the loop never sends one.
    return forms


def _api_form(m: Message) -> Message | None:
    content = []
    for b in blocks(m):
        if b.get("type") == "text" and not b.get("text"):
            continue
        if b.get("type") == "thinking" and not b.get("signature"):
            # Cut before its signature (max_tokens) or from a server that signs nothing:
            # the API rejects it, and Claude Code drops it too.
            continue
        content.append(valid_utf8(strip_private(b)))
    return {"role": m["role"], "content": content} if content else None


def _run_start(messages: list[Message], i: int) -> int:
    """Where the run of one role that holds messages[i] begins."""
    while i > 0 and messages[i - 1]["role"] == messages[i]["role"]:
        i -= 1
    return i


def _checked_problems(forms: list[Message], state: CheckState) -> list[str]:
    """check_history's findings on `forms`, checking only from where they depart from the
    history last found valid (`state`)."""
    last = state.messages
    kept = common_prefix(last, forms)
    # A message replaced in place since (an old tool result cleared: engine/context/pipeline.py)
    # checks as the one it replaced when it reads the same to the check: the role, whether it has
    # content, and its tool ids.
    limit = min(len(last), len(forms))
    while kept < limit and (last[kept] is forms[kept] or _checks_alike(last[kept], forms[kept])):
        kept += 1
    if kept == len(forms) == len(last):
        state.messages = forms
        return []
    # Checked from the run before the one holding the last kept message (an assistant's
    # pairing looks at the next run); the run before that is read, for the user run's check.
    start = _run_start(forms, kept - 1) if kept else 0
    checked = _run_start(forms, start - 1) if start else 0
    read = _run_start(forms, checked - 1) if checked else 0
    seen = {tid for tid, at in state.ids.items() if at < checked}
    problems = _problems(_merged(forms[read:]), 1 if read < checked else 0, seen)
    if problems:
        state.messages, state.ids = [], {}
        return problems
    ids = {tid: at for tid, at in state.ids.items() if at < checked}
    for at in range(checked, len(forms)):
        if forms[at]["role"] == "assistant":
            ids.update(dict.fromkeys(_pairing(forms[at])[0], at))
    state.messages, state.ids = forms, ids
    return []


def strip_thinking_signatures(messages: list[Message]) -> list[Message]:
    """Drop thinking blocks (their signatures are bound to the model that made them)."""
    out = []
    for m in messages:
        if m["role"] != "assistant":
            out.append(m)
            continue
        content = [b for b in blocks(m) if b.get("type") not in ("thinking", "redacted_thinking")]
        if content:
            out.append({"role": "assistant", "content": content})
    return _merged(out)


def deep_copy(messages: list[Message]) -> list[Message]:
    return copy.deepcopy(messages)
