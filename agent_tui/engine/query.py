"""The query loop (DESIGN §3): one explicit `State` per iteration, a named
`Transition` for every continue, a named `Terminal` for every return.

`query()` publishes every event through `emit` (the bus) and returns its
`Terminal`.  (Python async generators cannot return a value, so the loop is a
coroutine that publishes, rather than a generator that yields and returns.)

One iteration: normalise the history -> stream the model call, handing each
completed tool_use to the executor while the stream runs -> no tool_use:
`completed` -> collect results in block order -> append the assistant message
and one user message with every tool_result -> `next_turn`.
"""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..tools.base import Tool, ToolContext
from . import events as ev
from .executor import ExecutorOptions, StreamingToolExecutor
from .messages import (
    INTERRUPTED_FOR_TOOL_USE,
    INTERRUPTED_MESSAGE,
    Message,
    assistant_message,
    normalize_for_api,
    text_block,
    user_message,
)
from .model import (
    BlockDelta,
    BlockStart,
    BlockStop,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelClient,
    ModelError,
    ModelRequest,
    context_window_for,
)
from .permissions import PermissionPolicy


class Transition(str, enum.Enum):
    NEXT_TURN = "next_turn"
    MAX_OUTPUT_TOKENS_ESCALATE = "max_output_tokens_escalate"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    TOKEN_BUDGET_CONTINUATION = "token_budget_continuation"
    FALLBACK_RETRY = "fallback_retry"


class TerminalReason(str, enum.Enum):
    COMPLETED = "completed"
    MAX_TURNS = "max_turns"
    ABORTED_STREAMING = "aborted_streaming"
    ABORTED_TOOLS = "aborted_tools"
    MODEL_ERROR = "model_error"
    PROMPT_TOO_LONG = "prompt_too_long"
    BLOCKING_LIMIT = "blocking_limit"
    STOP_HOOK_PREVENTED = "stop_hook_prevented"
    HOOK_STOPPED = "hook_stopped"
    MAX_OUTPUT_TOKENS = "max_output_tokens"


@dataclass(frozen=True, slots=True)
class State:
    messages: tuple[Message, ...]
    turn_count: int = 1
    transition: Transition | None = None
    max_output_tokens_override: int | None = None
    max_output_tokens_recovery_count: int = 0
    has_attempted_reactive_compact: bool = False
    stop_hook_active: bool = False
    auto_compact_tracking: Any = None


@dataclass(frozen=True, slots=True)
class Terminal:
    reason: TerminalReason
    messages: list[Message]
    turns: int
    result: str = ""
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        return self.reason not in (TerminalReason.COMPLETED,)


@dataclass
class RetryPolicy:
    max_retries: int = 10
    base_delay: float = 0.5
    max_delay: float = 32.0
    # A server's retry-after is honoured up to this many seconds.
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        base = min(self.base_delay * (2 ** (attempt - 1)), self.max_delay)
        return base + random.uniform(0, 0.25 * base)


@dataclass
class QueryParams:
    messages: list[Message]
    model: ModelClient
    tools: list[Tool]
    policy: PermissionPolicy
    emit: Callable[[ev.Event], None]
    abort: asyncio.Event
    make_context: Callable[[str], ToolContext]
    system: str | list[dict[str, Any]] = ""
    model_name: str = ""
    max_tokens: int = 32000
    max_turns: int | None = None
    max_concurrency: int = 10
    context_window: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    parent_tool_use_id: str | None = None
    executor_options: ExecutorOptions | None = None
    # Totals across every request of this query (for the result object).
    usage_totals: dict[str, int] = field(default_factory=dict)


@dataclass
class _Streamed:
    """What one streamed request produced (or left behind when interrupted)."""

    message: Message | None = None
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    completed: dict[int, dict[str, Any]] = field(default_factory=dict)
    text_parts: dict[int, list[str]] = field(default_factory=dict)
    open_types: dict[int, str] = field(default_factory=dict)

    def partial_content(self) -> list[dict[str, Any]]:
        """Completed blocks plus text that was still streaming, in block order."""
        content = []
        for index in sorted(set(self.completed) | set(self.open_types)):
            if index in self.completed:
                content.append(self.completed[index])
            elif self.open_types.get(index) == "text":
                text = "".join(self.text_parts.get(index, []))
                if text:
                    content.append(text_block(text))
        if all(b.get("type") in ("thinking", "redacted_thinking") for b in content):
            return []
        return content


class _Aborted(Exception):
    pass


def _auto_compact_threshold(window: int, max_output: int) -> int:
    return window - min(max_output, 20_000) - 13_000


async def query(params: QueryParams) -> Terminal:
    emit = params.emit
    parent = params.parent_tool_use_id
    tools_by_name = {t.name: t for t in params.tools}
    api_tools = [_tool_to_api(t) for t in params.tools]
    model_name = params.model_name or params.model.name
    window = params.context_window or context_window_for(model_name)
    state = State(messages=tuple(params.messages))

    def finish(reason: TerminalReason, messages: list[Message], error: str | None = None) -> Terminal:
        return Terminal(
            reason=reason,
            messages=messages,
            turns=state.turn_count,
            result=_last_text(messages),
            error=error,
            usage=dict(params.usage_totals),
        )

    while True:
        messages = list(state.messages)
        if params.abort.is_set():
            return finish(TerminalReason.ABORTED_STREAMING, messages + [user_message(INTERRUPTED_MESSAGE)])
        max_tokens = state.max_output_tokens_override or params.max_tokens
        request = ModelRequest(
            model=model_name,
            messages=normalize_for_api(messages),
            system=params.system,
            tools=api_tools,
            max_tokens=max_tokens,
        )
        def make_executor() -> StreamingToolExecutor:
            return StreamingToolExecutor(
                tools_by_name,
                policy=params.policy,
                emit=emit,
                make_context=params.make_context,
                options=params.executor_options
                or ExecutorOptions(max_concurrency=params.max_concurrency, parent_tool_use_id=parent),
            )

        try:
            streamed, executor = await _stream_with_retries(
                params, request, state.turn_count, make_executor, window
            )
        except _Aborted as aborted:
            streamed, executor = aborted.args
            emit(ev.Interrupted(during="streaming", parent_tool_use_id=parent))
            content = streamed.partial_content()
            if not content:
                return finish(TerminalReason.ABORTED_STREAMING, messages + [user_message(INTERRUPTED_MESSAGE)])
            results = await executor.abort()
            messages.append(assistant_message(content))
            if results:
                messages.append(user_message(results + [text_block(INTERRUPTED_FOR_TOOL_USE)]))
            else:
                messages.append(user_message(INTERRUPTED_MESSAGE))
            return finish(TerminalReason.ABORTED_STREAMING, messages)
        except ModelError as err:
            text = _describe_model_error(err, model_name)
            emit(ev.Notice(kind="error", message=text, parent_tool_use_id=parent))
            reason = TerminalReason.PROMPT_TOO_LONG if err.kind == "prompt_too_long" else TerminalReason.MODEL_ERROR
            return finish(reason, messages, error=text)

        assert streamed.message is not None
        content = streamed.message["content"]
        tool_use_blocks = [b for b in content if b.get("type") == "tool_use"]

        if not content:
            # Refusal or an empty answer: nothing to append (an empty assistant message is invalid).
            if streamed.stop_reason == "refusal":
                text = "The model declined to answer this request (stop_reason: refusal)."
                emit(ev.Notice(kind="error", message=text, parent_tool_use_id=parent))
                return finish(TerminalReason.COMPLETED, messages, error=text)
            if streamed.stop_reason == "max_tokens":
                text = _max_tokens_message(max_tokens)
                emit(ev.Notice(kind="error", message=text, parent_tool_use_id=parent))
                return finish(TerminalReason.MAX_OUTPUT_TOKENS, messages, error=text)
            return finish(TerminalReason.COMPLETED, messages)

        messages.append(streamed.message)

        if tool_use_blocks:
            try:
                results = await _race_abort(executor.results(), params.abort)
            except _Aborted:
                emit(ev.Interrupted(during="tools", parent_tool_use_id=parent))
                results = await executor.abort()
                messages.append(user_message(results + [text_block(INTERRUPTED_FOR_TOOL_USE)]))
                return finish(TerminalReason.ABORTED_TOOLS, messages)
            messages.append(user_message(results))

        if streamed.stop_reason == "max_tokens":
            text = _max_tokens_message(max_tokens)
            emit(ev.Notice(kind="error", message=text, parent_tool_use_id=parent))
            return finish(TerminalReason.MAX_OUTPUT_TOKENS, messages, error=text)

        if not tool_use_blocks:
            return finish(TerminalReason.COMPLETED, messages)

        if params.max_turns is not None and state.turn_count + 1 > params.max_turns:
            text = f"Reached the maximum number of turns ({params.max_turns})."
            emit(ev.Notice(kind="error", message=text, parent_tool_use_id=parent))
            return finish(TerminalReason.MAX_TURNS, messages, error=text)

        state = replace(
            state,
            messages=tuple(messages),
            turn_count=state.turn_count + 1,
            transition=Transition.NEXT_TURN,
            max_output_tokens_override=None,
        )


async def _race_abort(awaitable: Any, abort: asyncio.Event) -> Any:
    """Await `awaitable` unless the user aborts first (then raise `_Aborted`)."""
    task = asyncio.ensure_future(awaitable)
    if abort.is_set():
        task.cancel()
        raise _Aborted(None)
    waiter = asyncio.ensure_future(abort.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        waiter.cancel()
        raise
    if task in done:
        waiter.cancel()
        return task.result()
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):
        pass
    raise _Aborted(None)


async def _stream_with_retries(
    params: QueryParams,
    request: ModelRequest,
    turn: int,
    make_executor: Callable[[], StreamingToolExecutor],
    window: int,
) -> tuple[_Streamed, StreamingToolExecutor]:
    attempt = 1
    while True:
        executor = make_executor()
        params.emit(
            ev.RequestStarted(
                turn=turn,
                model=request.model,
                max_tokens=request.max_tokens,
                attempt=attempt,
                parent_tool_use_id=params.parent_tool_use_id,
            )
        )
        streamed = _Streamed()
        try:
            await _race_abort(_stream_once(params, request, executor, streamed, window), params.abort)
            return streamed, executor
        except _Aborted:
            raise _Aborted(streamed, executor) from None
        except ModelError as err:
            # Tools started from a stream that failed are discarded with its blocks.
            await executor.abort()
            if not err.retryable or attempt > params.retry.max_retries:
                raise
            delay = params.retry.delay(attempt, err.retry_after)
            where = " mid-stream" if err.mid_stream else ""
            params.emit(
                ev.Notice(
                    kind="retry",
                    message=(
                        f"{_short_error(err)}{where}; retrying in {delay:.1f}s "
                        f"(attempt {attempt}/{params.retry.max_retries})"
                    ),
                    parent_tool_use_id=params.parent_tool_use_id,
                )
            )
            try:
                await _race_abort(asyncio.sleep(delay), params.abort)
            except _Aborted:
                raise _Aborted(_Streamed(), make_executor()) from None
            attempt += 1


async def _stream_once(
    params: QueryParams, request: ModelRequest, executor: StreamingToolExecutor, out: _Streamed, window: int
) -> None:
    emit = params.emit
    parent = params.parent_tool_use_id
    max_output = request.max_tokens
    threshold = _auto_compact_threshold(window, max_output)
    totals = params.usage_totals
    base_usage: dict[str, int] = {}

    def publish_usage(usage: dict[str, int]) -> None:
        context = (
            usage.get("input_tokens", 0)
            + usage.get("cache_read_input_tokens", 0)
            + usage.get("cache_creation_input_tokens", 0)
            + usage.get("output_tokens", 0)
        )
        emit(
            ev.Usage(
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
                cache_read_input_tokens=usage.get("cache_read_input_tokens", 0),
                cache_creation_input_tokens=usage.get("cache_creation_input_tokens", 0),
                context_tokens=context,
                context_window=window,
                auto_compact_threshold=threshold,
                parent_tool_use_id=parent,
            )
        )

    text_parts = out.text_parts
    open_types = out.open_types
    async for event in params.model.stream(request):
        kind = type(event)
        if kind is BlockDelta:
            if event.kind == "text":
                text_parts.setdefault(event.index, []).append(event.text)
                emit(ev.TextDelta(index=event.index, text=event.text, parent_tool_use_id=parent))
            elif event.kind == "thinking":
                emit(ev.ThinkingDelta(index=event.index, text=event.text, parent_tool_use_id=parent))
        elif kind is BlockStart:
            open_types[event.index] = event.block.get("type", "")
            text_parts[event.index] = []
        elif kind is BlockStop:
            block = event.block
            out.completed[event.index] = block
            open_types.pop(event.index, None)
            emit(ev.BlockCompleted(index=event.index, block=_public_block(block), parent_tool_use_id=parent))
            if block.get("type") == "tool_use":
                executor.add_tool(block)
        elif kind is MessageStart:
            base_usage = dict(event.usage)
            publish_usage(base_usage)
        elif kind is MessageDelta:
            out.usage = event.usage
        elif kind is MessageStop:
            out.message = event.message
            out.stop_reason = event.stop_reason
            out.usage = event.usage
    if out.message is None:
        raise ModelError("connection", "The stream ended without a message_stop event", mid_stream=True)
    for key, value in out.usage.items():
        totals[key] = totals.get(key, 0) + value
    publish_usage(out.usage)


def _public_block(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if not k.startswith("_")}


def _tool_to_api(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


def _last_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m["role"] == "assistant":
            return "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
    return ""


def _short_error(err: ModelError) -> str:
    labels = {
        "overloaded": "API overloaded",
        "rate_limit": "Rate limited",
        "server": "API server error",
        "connection": "Connection lost",
        "timeout": "Request timed out",
        "api_error": "API error",
    }
    label = labels.get(err.kind, "API error")
    return f"{label} ({err.status})" if err.status and err.status != 200 else label


def _max_tokens_message(max_tokens: int) -> str:
    return (
        f"The response was cut off at the output token limit ({max_tokens} tokens). "
        "Ask for a shorter answer or break the work into smaller steps."
    )


def _describe_model_error(err: ModelError, model: str) -> str:
    if err.kind == "prompt_too_long":
        return (
            f"Prompt is too long for {model}: {err.message}. "
            "Start a new conversation with /clear, or shorten the request."
        )
    if err.kind == "auth":
        return (
            f"Authentication failed ({err.status}): {err.message}. "
            "Check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)."
        )
    if err.kind == "permission":
        return f"Permission denied by the API ({err.status}): {err.message}. Check ANTHROPIC_API_KEY."
    if err.kind == "not_found":
        return f"Model or endpoint not found ({err.status}): {err.message}. Check --model and ANTHROPIC_BASE_URL."
    if err.retryable:
        return f"{_short_error(err)}: {err.message} (gave up after retries)"
    return f"API error ({err.status}): {err.message}"

