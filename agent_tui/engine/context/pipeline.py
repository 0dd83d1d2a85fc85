"""The context pipeline (docs/architecture.md §7).

Before every request the loop runs, in this order:

1. tool-result budget: a result over its tool's cap is saved to a file and
   replaced by a preview and the file's path;
2. microcompact: above a soft threshold, old results of the file and shell
   tools (never those the model has not answered yet) become a one-line placeholder;
3. autocompact: above the auto-compact threshold, the model summarises the
   conversation and the summary (with the latest request verbatim) replaces it.

Each step takes a history and returns a new one plus a `StepRecord` of what it
freed; the input is never mutated and untouched messages are shared.  No step
separates a tool_use from its tool_result: the first two only replace result
content, and a compaction replaces the whole history with one user message.

Token count = the last API usage (input + cache read + cache creation +
output), which covers the messages up to the answer it measured, plus chars/4
for the messages after it.

Token accounting is in window.py, step 3's summary in compaction.py, the token
budget in loop/budget.py.
"""

from __future__ import annotations

import asyncio
import itertools
import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import events as ev
from ..messages import Message, blocks, text_block
from .compaction import Compacted, CompactionFailed, compact_conversation
from .window import (
    CHARS_PER_TOKEN,
    MAX_COMPACT_FAILURES,
    CompactionSettings,
    ContextTracking,
    PipelineEnv,
    block_chars,
    count_tokens,
)

if TYPE_CHECKING:
    from ..memo import HistoryMemo

# A tool that cuts its own output to the cap (Bash) adds a marker line: leave such results alone.
CAP_SLACK = 200
CLEARED_RESULT = "[Old tool result content cleared]"
# Tools whose old results can be re-created by calling the tool again.
COMPACTABLE_TOOLS = frozenset({"Read", "Bash", "Grep", "Glob", "Edit", "MultiEdit", "Write"})


@dataclass(frozen=True, slots=True)
class StepRecord:
    """What one pipeline step did: tokens freed (estimated) and results touched."""

    step: str
    tokens_freed: int = 0
    items: int = 0
    # Files the tool-result budget wrote.
    paths: tuple[str, ...] = ()
    # Estimated tokens freed per history index (to correct the last API usage).
    freed_by_message: Mapping[int, int] = field(default_factory=dict, repr=False)


def _tool_names(messages: list[Message]) -> dict[str, str]:
    names: dict[str, str] = {}
    for m in messages:
        if m["role"] == "assistant":
            for b in blocks(m):
                if b.get("type") == "tool_use":
                    names[b.get("id", "")] = b.get("name", "")
    return names


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _with_content(block: Mapping[str, Any], text: str) -> dict[str, Any]:
    """`block` with its text replaced by `text` (images and documents are kept)."""
    content = block.get("content")
    if isinstance(content, list):
        others = [b for b in content if isinstance(b, dict) and b.get("type") != "text"]
        return {**block, "content": [text_block(text), *others]}
    return {**block, "content": text}


def _preview(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit]


def _safe_name(tool_use_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tool_use_id) or "result"


def _saved_result(text: str, name: str, cap: int, path: Path, preview_chars: int) -> str:
    preview = _preview(text, preview_chars)
    return (
        f"Output too large ({len(text):,} characters, over the {cap:,}-character limit for "
        f"{name or 'this tool'}). Full output saved to: {path}\n"
        "Read that file (with offset and limit) or search it with Grep for the parts you need.\n\n"
        f"Preview (first {len(preview):,} characters):\n{preview}\n..."
    )


def apply_tool_result_budget(
    messages: list[Message], *, settings: CompactionSettings, save_dir: Path, memo: HistoryMemo | None = None
) -> tuple[list[Message], StepRecord]:
    """Step 1: every tool_result over its tool's cap is saved under `save_dir` and
    replaced by a preview and the file's path.  Results already replaced are under
    the cap, so the step is idempotent.  With a `memo` (engine/memo.py), a message found
    within the caps is not looked at again."""
    smallest = min([settings.default_result_cap, *settings.result_caps.values()])
    names: dict[str, str] | None = None

    def within_caps(message: Message) -> bool:
        nonlocal names
        content = message.get("content")
        if message["role"] != "user" or not isinstance(content, list):
            return True
        for b in content:
            if b.get("type") != "tool_result" or block_chars(b) <= smallest + CAP_SLACK:
                continue
            names = _tool_names(messages) if names is None else names
            cap = settings.result_caps.get(names.get(b.get("tool_use_id", ""), ""), settings.default_result_cap)
            if len(_result_text(b)) > cap + CAP_SLACK:
                return False
        return True

    out: list[Message] | None = None
    freed: dict[int, int] = {}
    paths: list[str] = []
    indexes: Iterable[int] = range(len(messages))
    if memo is not None:  # only the messages not known to be within the caps
        indexes = itertools.compress(indexes, map(operator.not_, memo.under_caps.map(messages, within_caps)))
    for i in indexes:
        m = messages[i]
        content = m.get("content")
        if m["role"] != "user" or not isinstance(content, list):
            continue
        new_content: list[Any] | None = None
        for j, b in enumerate(content):
            if b.get("type") != "tool_result" or block_chars(b) <= smallest + CAP_SLACK:
                continue
            if names is None:
                names = _tool_names(messages)
            name = names.get(b.get("tool_use_id", ""), "")
            cap = settings.result_caps.get(name, settings.default_result_cap)
            text = _result_text(b)
            if len(text) <= cap + CAP_SLACK:
                continue
            path = save_dir / f"{_safe_name(b.get('tool_use_id', ''))}.txt"
            try:
                save_dir.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                replacement = _saved_result(text, name, cap, path, settings.preview_chars)
                paths.append(str(path))
            except OSError as exc:
                replacement = (
                    f"{_preview(text, settings.preview_chars)}\n\n... [{len(text):,} characters in all; "
                    f"the rest was cut and could not be saved: {exc}]"
                )
            new_block = _with_content(b, replacement)
            if new_content is None:
                new_content = list(content)
            new_content[j] = new_block
            freed[i] = freed.get(i, 0) + (block_chars(b) - block_chars(new_block)) // CHARS_PER_TOKEN
        if new_content is not None:
            if out is None:
                out = list(messages)
            out[i] = {**m, "content": new_content}
    record = StepRecord("tool_result_budget", sum(freed.values()), len(paths), tuple(paths), freed)
    return (out if out is not None else messages), record


def microcompact(
    messages: list[Message], *, keep: int, memo: HistoryMemo | None = None
) -> tuple[list[Message], StepRecord]:
    """Step 2: results of the file and shell tools older than the `keep` most recent
    become CLEARED_RESULT (the model can call the tool again if it needs them).

    Only results the model has answered are eligible: those before the last
    assistant message.  Results after it are what the model asked for and is
    about to read.  With a `memo`, a message cleared of the same blocks as last time
    is the same object as last time (engine/memo.py)."""
    names = _tool_names(messages)
    seen = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=0)
    found: list[tuple[int, int]] = []
    for i, m in enumerate(messages):
        content = m.get("content")
        if m["role"] != "user" or not isinstance(content, list):
            continue
        for j, b in enumerate(content):
            if b.get("type") == "tool_result" and names.get(b.get("tool_use_id", "")) in COMPACTABLE_TOOLS:
                found.append((i, j))
    by_message: dict[int, list[int]] = {}
    for i, j in found[: max(0, len(found) - keep)]:
        block = messages[i]["content"][j]
        if i < seen and block.get("content") != CLEARED_RESULT and block_chars(block) > len(CLEARED_RESULT) + 16:
            by_message.setdefault(i, []).append(j)
    out: list[Message] | None = list(messages) if by_message else None
    freed: dict[int, int] = {}
    last = memo.cleared if memo is not None else {}
    made: dict[int, tuple[Any, tuple[int, ...], Any]] = {}
    for i, js in by_message.items():
        original, which = messages[i], tuple(js)
        hit = last.get(id(original))
        if hit is not None and hit[0] is original and hit[1] == which:
            new = hit[2]
        else:
            content = list(original["content"])
            for j in which:
                content[j] = {**content[j], "content": CLEARED_RESULT}
            new = {**original, "content": content}
        made[id(original)] = (original, which, new)
        out[i] = new  # type: ignore[index]
        freed[i] = sum(
            (block_chars(original["content"][j]) - block_chars(new["content"][j])) // CHARS_PER_TOKEN for j in which
        )
    if memo is not None:
        memo.cleared = made
    record = StepRecord("microcompact", sum(freed.values()), sum(map(len, by_message.values())), (), freed)
    return (out if out is not None else messages), record


@dataclass(frozen=True)
class Prepared:
    messages: list[Message]
    tracking: ContextTracking
    tokens: int
    steps: tuple[StepRecord, ...]
    compacted: Compacted | None = None


def _account(tracking: ContextTracking, record: StepRecord, tokens: int) -> tuple[ContextTracking, int]:
    covered = tracking.api_messages
    inside = sum(v for i, v in record.freed_by_message.items() if i < covered)
    if inside:
        tracking = replace(tracking, api_tokens=max(0, tracking.api_tokens - inside))
    return tracking, tokens - record.tokens_freed


def shrink(
    messages: list[Message], tracking: ContextTracking, env: PipelineEnv, memo: HistoryMemo | None
) -> tuple[list[Message], ContextTracking, int, int, list[StepRecord]]:
    """Steps 1 and 2: the history, tracking and token count after them, the count before, their records.
    (Proportional to the history, less what `memo` has: in a worker thread.)"""
    settings = env.settings
    tokens = start = count_tokens(messages, tracking, env.overhead)
    messages, budget = apply_tool_result_budget(messages, settings=settings, save_dir=env.save_dir, memo=memo)
    tracking, tokens = _account(tracking, budget, tokens)
    steps = [budget]
    if tokens > settings.microcompact_threshold(env.window):
        messages, micro = microcompact(messages, keep=settings.microcompact_keep, memo=memo)
        tracking, tokens = _account(tracking, micro, tokens)
        steps.append(micro)
    return messages, tracking, tokens, start, steps


async def prepare(
    messages: list[Message], tracking: ContextTracking, env: PipelineEnv, memo: HistoryMemo | None = None
) -> Prepared:
    """Run the pipeline before a request.  Raises CompactionInterrupted on abort.  Steps 1 and
    2 look at the whole history (and may write files): they run in a worker thread, never on
    the event loop's (the TUI draws there)."""
    settings = env.settings
    messages, tracking, tokens, start, steps = await asyncio.to_thread(shrink, messages, tracking, env, memo)
    compacted = None
    if settings.auto and tokens > env.threshold and tracking.compact_failures < MAX_COMPACT_FAILURES:
        try:
            compacted = await compact_conversation(messages, env, trigger="auto", tokens_before=tokens)
        except CompactionFailed as exc:
            failures = tracking.compact_failures + 1
            tracking = replace(tracking, compact_failures=failures)
            if failures >= MAX_COMPACT_FAILURES:
                tail = (
                    f" It failed {failures} times in a row, so auto-compact is off for the rest of this session: "
                    "use /compact to try again, or /clear to start over."
                )
            else:
                tail = " The conversation goes on uncompacted; it will try again before the next request."
            env.emit(ev.Notice(kind="error", message=f"Auto-compact failed: {exc}.{tail}"))
        else:
            steps.append(StepRecord("autocompact", compacted.tokens_before - compacted.tokens_after, 1))
            return Prepared(compacted.messages, ContextTracking(), compacted.tokens_after, tuple(steps), compacted)
    if tokens != start:
        env.publish_estimate(tokens)
    return Prepared(messages, tracking, tokens, tuple(steps))
