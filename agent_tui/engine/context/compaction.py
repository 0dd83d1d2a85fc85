"""Step 3 of the pre-request pipeline (docs/architecture.md §7): compaction.

The model summarises the conversation in the structure of docs/architecture.md §7 (request,
concepts, files, errors, pending tasks, current work, next step); the summary,
followed by the user's latest request verbatim, replaces the history as one
user message.  Used above the auto-compact threshold (`autocompact`), after a
prompt-too-long error (`reactive`) and by `/compact` (`manual`).  The memory
files live in the system prompt, which a compaction leaves alone; the caller
re-reads them afterwards.

A summary request carries the history itself, so it may not fit either: the
oldest rounds are then left out (never a tool_use without its tool_result),
sized by the figures of the prompt-too-long error when there are some.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from .. import events as ev
from ..aborting import race_abort
from ..messages import (
    INTERRUPTED_FOR_TOOL_USE,
    INTERRUPTED_MESSAGE,
    Message,
    blocks,
    normalize_for_api,
    text_block,
    user_message,
)
from ..models.base import ModelError, output_cap_for
from ..models.stream import BlockDelta, MessageStop, ModelRequest
from ..pricing import add_usage
from .window import CHARS_PER_TOKEN, PipelineEnv, estimate_text, estimate_tokens, message_chars

# Room kept free in a summary request for estimation error.
SUMMARY_MARGIN = 2_000
MAX_SUMMARY_TRIMS = 3
PROGRESS_STEP = 8  # estimated tokens between compaction_progress events

SUMMARY_PREAMBLE = (
    "This session continues a conversation that ran out of context. "
    "The summary below covers the earlier part of it."
)
LATEST_REQUEST_LABEL = "The user's latest request, verbatim:"
CONTINUE_INSTRUCTION = "Continue the work from where it stopped, without asking the user further questions."
TRIMMED_NOTE = "[The oldest messages are left out here: they do not fit in one summary request.]"

SUMMARY_PROMPT = """\
Write a detailed summary of the conversation so far. It will replace the conversation: \
whoever continues the work sees only this summary, so keep every detail needed to carry on.

Put the summary inside <summary></summary> tags, in these sections:

1. Primary request and intent: everything the user asked for, in detail.
2. Key technical concepts: technologies, frameworks and conventions that matter.
3. Files and code sections: each file read, changed or created, why it matters, and the important snippets.
4. Errors and fixes: every error met and how it was fixed, including what the user said about it.
5. Pending tasks: what the user asked for that is not done yet.
6. Current work: precisely what was being worked on just before this summary, with file names and code.
7. Next step: the next step in line with the user's latest request, quoting that request where it helps. \
Leave this out if the work is complete.

Answer with text only; do not call any tools."""

_PROMPT_TOO_LONG = re.compile(r"(\d+)\s*tokens?\s*>\s*(\d+)", re.IGNORECASE)
_HOOK_FEEDBACK = re.compile(r"^\w+ hook feedback:\n")
_MARKERS = frozenset({INTERRUPTED_MESSAGE, INTERRUPTED_FOR_TOOL_USE})
_SUMMARY_TAG = re.compile(r"<summary>(.*?)(?:</summary>|$)", re.DOTALL)


class CompactionFailed(Exception):
    """The summary could not be made; the message says why, for the user."""


class CompactionInterrupted(Exception):
    """The user aborted while the summary was being written."""


@dataclass(frozen=True)
class Compacted:
    messages: list[Message]
    summary: str
    tokens_before: int
    tokens_after: int
    trigger: str


def parse_prompt_too_long(message: str) -> tuple[int, int] | None:
    """(actual, limit) from "prompt is too long: 250000 tokens > 200000 maximum"."""
    match = _PROMPT_TOO_LONG.search(message or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _is_summary(message: Message) -> bool:
    return any(b.get("type") == "text" and b.get("text", "").startswith(SUMMARY_PREAMBLE) for b in blocks(message))


def latest_request(messages: list[Message]) -> list[dict[str, Any]]:
    """The content blocks of the user's latest request (not tool results, nudges or
    hook feedback); inside an earlier summary, the request it kept verbatim."""
    for m in reversed(messages):
        if m["role"] != "user" or m.get("_meta"):
            continue
        content = [b for b in blocks(m) if b.get("type") != "tool_result"]
        if _is_summary(m):
            labels = [k for k, b in enumerate(content) if b.get("text") == LATEST_REQUEST_LABEL]
            kept = content[labels[0] + 1 :] if labels else []
            return [b for b in kept if b.get("text") != CONTINUE_INSTRUCTION]
        content = [b for b in content if not _is_marker(b)]
        if any(b.get("type") != "text" or b.get("text", "").strip() for b in content):
            return content
    return []


def _is_marker(block: dict[str, Any]) -> bool:
    """Text the engine or a hook wrote into a user message: not a request."""
    if block.get("type") != "text":
        return False
    text = block.get("text", "")
    return text in _MARKERS or _HOOK_FEEDBACK.match(text) is not None


def summary_message(summary: str, request: list[dict[str, Any]], *, continue_work: bool) -> Message:
    content = [text_block(f"{SUMMARY_PREAMBLE}\n\n<summary>\n{summary}\n</summary>")]
    if request:
        content.append(text_block(LATEST_REQUEST_LABEL))
        content.extend(dict(b) for b in request)
    if continue_work:
        content.append(text_block(CONTINUE_INSTRUCTION))
    return user_message(content)


def fit_messages(messages: list[Message], max_tokens: int) -> list[Message] | None:
    """The newest whole rounds of `messages` whose estimate fits in `max_tokens`.

    Cuts fall only just before an assistant message or a user message without
    tool results, so every tool_use keeps its tool_result; a note opens the list
    when older messages were left out.  None when not even the last message fits."""
    chars = [message_chars(m) for m in messages]
    suffix = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + chars[i]
    limit = max_tokens * CHARS_PER_TOKEN
    if suffix[0] <= limit:
        return messages
    note = len(TRIMMED_NOTE)
    for i in range(1, len(messages)):
        if suffix[i] + note <= limit and _may_start(messages[i]):
            return [user_message(TRIMMED_NOTE), *messages[i:]]
    return None


def newest_round(messages: list[Message]) -> list[Message]:
    """The newest whole round of `messages` (from its last possible cut), whatever its size."""
    for i in range(len(messages) - 1, 0, -1):
        if _may_start(messages[i]):
            return [user_message(TRIMMED_NOTE), *messages[i:]]
    return messages


def _may_start(message: Message) -> bool:
    if message["role"] == "assistant":
        return True
    return not any(b.get("type") == "tool_result" for b in blocks(message))


def _extract_summary(text: str) -> str:
    match = _SUMMARY_TAG.search(text)
    summary = match.group(1) if match else re.sub(r"<analysis>.*?</analysis>", "", text, flags=re.DOTALL)
    return summary.strip()


async def _race(awaitable: Any, abort: asyncio.Event) -> Any:
    """Await `awaitable` unless the user aborts first (then raise CompactionInterrupted)."""
    return await race_abort(awaitable, abort, CompactionInterrupted())


async def _summarize(env: PipelineEnv, request: ModelRequest, trigger: str) -> MessageStop:
    async def run() -> MessageStop:
        chars = reported = 0
        async for event in env.model.stream(request):
            if type(event) is MessageStop:
                return event
            if type(event) is BlockDelta and event.kind in ("text", "thinking"):
                chars += len(event.text)
                # Every PROGRESS_STEP tokens, so a long summary costs a bounded number of events.
                if chars // 4 - reported >= PROGRESS_STEP:
                    reported = chars // 4
                    env.emit(ev.CompactionProgress(trigger=trigger, output_tokens=reported))
        raise ModelError("connection", "The summary stream ended without message_stop", mid_stream=True)

    return await _race(run(), env.abort)


async def compact_conversation(
    messages: list[Message],
    env: PipelineEnv,
    *,
    trigger: str,
    instructions: str = "",
    overflow: str | None = None,
    tokens_before: int | None = None,
) -> Compacted:
    """Summarise `messages` with the model and return the history that replaces them.

    trigger: "auto" | "reactive" | "manual".  `overflow` is the prompt-too-long
    error that caused a reactive compaction (its token figures size the summary
    request).  Publishes a notice when it starts and, on success, a `compaction`
    event and a `usage` estimate.  Raises CompactionFailed or CompactionInterrupted.
    """
    if tokens_before is None:
        # Proportional to the history: in a worker thread, never on the event loop's (the TUI draws there).
        tokens_before = env.overhead + await asyncio.to_thread(estimate_tokens, messages)
    if env.hooks is not None:
        # PreCompact cannot block (Claude Code's protocol); its output reaches the user as notices.
        await env.hooks.run(
            "PreCompact",
            {"trigger": "manual" if trigger == "manual" else "auto", "custom_instructions": instructions},
            abort=env.abort,
            parent_tool_use_id=env.parent_tool_use_id,
        )
    request_blocks = latest_request(messages)
    prompt = SUMMARY_PROMPT
    if instructions.strip():
        prompt += f"\n\nAdditional instructions from the user for this summary:\n{instructions.strip()}"
    env.emit(ev.Notice(kind="compaction", message=f"Compacting the conversation ({tokens_before:,} tokens)…"))
    stop = await _request_summary(messages, env, prompt, trigger, overflow)
    add_usage(env.usage_totals, stop.usage)
    add_usage(env.usage_by_model.setdefault(env.model_name, {}), stop.usage)
    text = "".join(b.get("text", "") for b in stop.message.get("content", []) if b.get("type") == "text")
    summary = _extract_summary(text)
    if not summary:
        raise CompactionFailed("the model returned an empty summary")
    new = [summary_message(summary, request_blocks, continue_work=trigger != "manual")]
    tokens_after = env.overhead + estimate_tokens(new)
    env.emit(ev.Compaction(tokens_before=tokens_before, tokens_after=tokens_after, trigger=trigger))
    env.publish_estimate(tokens_after)
    return Compacted(new, summary, tokens_before, tokens_after, trigger)


async def _request_summary(
    messages: list[Message], env: PipelineEnv, prompt: str, trigger: str, overflow: str | None
) -> MessageStop:
    """Ask for the summary of as much of the history as fits; a request that is still too
    long is sent again with less history, a retryable failure after a pause."""
    summary_max = min(env.settings.summary_max_tokens, output_cap_for(env.model_name))
    fixed = env.overhead + estimate_text(prompt) + summary_max + SUMMARY_MARGIN
    target = env.window - fixed
    if overflow is not None:
        target = _shrunk_target(target, overflow, env.overhead + estimate_tokens(messages), fixed, messages)
    trims = 0
    attempt = 1
    # After the server said the prompt is too long, its figure is trusted over the estimate:
    # when nothing fits the budget it implies, the newest round is sent and the server judges.
    smallest_sent = overflow is None
    while True:
        kept = await asyncio.to_thread(fit_messages, messages, target)
        if kept is None and not smallest_sent:
            kept, smallest_sent = newest_round(messages), True
        if kept is None:
            raise CompactionFailed("even the latest exchange alone is too large to summarise")
        request = ModelRequest(
            model=env.model_name,
            messages=await asyncio.to_thread(normalize_for_api, [*kept, user_message(prompt)]),
            system=env.system,
            tools=env.tools,
            max_tokens=summary_max,
            prompt_caching=env.prompt_caching,
        )
        try:
            return await _summarize(env, request, trigger)
        except ModelError as err:
            if err.kind == "prompt_too_long" and trims < MAX_SUMMARY_TRIMS:
                trims += 1
                target = _shrunk_target(target, err.message, env.overhead + estimate_tokens(kept), fixed, kept)
                continue
            if err.retryable and attempt <= env.retry.max_retries:
                delay = env.retry.delay(attempt, err.retry_after)
                message = f"Summary request failed ({err.message}); retrying in {delay:.1f}s"
                env.emit(ev.Notice(kind="retry", message=message))
                await _race(asyncio.sleep(delay), env.abort)
                attempt += 1
                continue
            raise CompactionFailed(f"the summary request failed: {err.message}") from err


def _shrunk_target(target: int, error: str, estimate: int, fixed: int, messages: list[Message]) -> int:
    """A smaller history budget after the server said a request was too long: scaled
    by how far the estimate was off when the error gives its figures, and at least
    a fifth smaller than what was sent."""
    sent = estimate_tokens(messages)
    figures = parse_prompt_too_long(error)
    if figures is not None:
        actual, limit = figures
        scale = actual / max(1, estimate)
        target = min(target, int((limit - fixed) / scale))
    return min(target, int(sent * 0.8))
