"""One request to the model, attempt by attempt (docs/architecture.md §3): stream it, publishing deltas
and handing each complete tool_use to the executor while the stream runs; retry what is
retryable (with backoff, bounded in count and in time); after three overloaded errors in a
row, fall back to the fallback model; and say in plain words why a request failed.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .. import events as ev
from ..aborting import race_abort
from ..context.window import CompactionSettings
from ..messages import Message, text_block
from ..models.base import ModelClient, ModelError
from ..models.stream import (
    BlockDelta,
    BlockStart,
    BlockStop,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelRequest,
    StreamNotice,
)
from ..pricing import add_usage
from .executor import StreamingToolExecutor

# Consecutive overloaded errors on one request before switching to the fallback model.
MAX_CONSECUTIVE_OVERLOADED = 3


@dataclass(frozen=True, slots=True)
class Tries:
    """The attempts of one request: the next attempt number within its turn (it counts on
    across retries, an escalation and a fallback), failed attempts and overloaded errors
    in a row (the retry budget and the fallback trigger), when the first attempt started
    (retries are bounded in time) and the id of its one, updating, retry notice."""

    attempt: int = 1
    failures: int = 0
    overloaded: int = 0
    started: float | None = None
    notice_id: str | None = None


@dataclass
class RetryPolicy:
    max_retries: int = 10
    base_delay: float = 0.5
    max_delay: float = 32.0
    # A server's retry-after is honoured up to this many seconds.
    max_retry_after: float = 60.0
    # Seconds one request may spend failing and waiting before it gives up (`maxRetrySeconds`).
    max_elapsed: float = 90.0
    clock: Callable[[], float] = time.monotonic

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        base = min(self.base_delay * (2 ** (attempt - 1)), self.max_delay)
        return base + random.uniform(0, 0.25 * base)


@dataclass
class Streamed:
    """What one streamed request produced (or left behind when interrupted)."""

    message: Message | None = None
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    completed: dict[int, dict[str, Any]] = field(default_factory=dict)
    text_parts: dict[int, list[str]] = field(default_factory=dict)
    open_types: dict[int, str] = field(default_factory=dict)
    # Which turn and attempt this was, and whether front ends saw any of its output.
    turn: int = 1
    attempt: int = 1
    published: bool = False
    # Set when the stream failed after tools started: the error, and the attempts so far.
    error: ModelError | None = None
    tries: Tries = Tries()

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


class Aborted(Exception):
    """The user aborted: what the interrupted attempt streamed, and the executor holding the
    tools it started (both None when no attempt was streaming, as during a retry's pause)."""

    def __init__(self, streamed: Streamed | None = None, executor: StreamingToolExecutor | None = None) -> None:
        super().__init__("aborted")
        self.streamed = streamed
        self.executor = executor


class FallbackTriggered(Exception):
    def __init__(self, from_model: str, to_model: str, attempt: int) -> None:
        super().__init__(f"{from_model} -> {to_model}")
        self.from_model = from_model
        self.to_model = to_model
        # The attempt that failed over (the fallback's first request counts on from it).
        self.attempt = attempt


class Attempts:
    """Streams one request to the model at a time, attempt by attempt, for one query."""

    def __init__(
        self,
        *,
        model: ModelClient,
        emit: Callable[[ev.Event], None],
        abort: asyncio.Event,
        retry: RetryPolicy,
        fallback_model: str | None,
        usage_totals: dict[str, int],
        usage_by_model: dict[str, dict[str, int]],
        compaction: CompactionSettings,
        make_executor: Callable[[str], StreamingToolExecutor],
    ) -> None:
        self.model = model
        self.emit = emit
        self.abort = abort
        self.retry = retry
        self.fallback_model = fallback_model
        self.usage_totals = usage_totals
        self.usage_by_model = usage_by_model
        self.compaction = compaction
        self.make_executor = make_executor

    async def stream(
        self, request: ModelRequest, turn: int, window: int, tries: Tries
    ) -> tuple[Streamed, StreamingToolExecutor]:
        """Stream `request`, retrying what is retryable.

        A failed attempt whose tools never started is dropped (`attempt_discarded`) and
        retried; one whose tools started is returned with `error` set, so the loop keeps
        those tools and their results before it retries.  Raises `FallbackTriggered`
        after MAX_CONSECUTIVE_OVERLOADED overloaded errors in a row when a fallback
        model is set, and the `ModelError` when it gives up."""
        if tries.started is None:
            # The time bound and the one updating retry line start with the request's first attempt.
            tries = replace(tries, started=self.retry.clock(), notice_id=f"retry-{next(_retry_ids)}")
        while True:
            executor = self.make_executor(request.model)
            self.emit(
                ev.RequestStarted(
                    turn=turn,
                    model=request.model,
                    max_tokens=request.max_tokens,
                    attempt=tries.attempt,
                )
            )
            streamed = Streamed(turn=turn, attempt=tries.attempt)
            try:
                await until_aborted(self._stream_once(request, executor, streamed, window), self.abort)
                return streamed, executor
            except Aborted:
                raise Aborted(streamed, executor) from None
            except ModelError as err:
                tries = replace(
                    tries,
                    failures=tries.failures + 1,
                    overloaded=tries.overloaded + 1 if err.kind == "overloaded" else 0,
                )
                if executor.started_any:
                    streamed.error, streamed.tries = err, tries
                    return streamed, executor
                after, delay = self.after_failure(request.model, err, tries)
                self.discard(streamed, {"fallback": "fallback", "retry": "retry"}.get(after, "error"))
                if after == "fallback":
                    raise FallbackTriggered(request.model, self.fallback_model or "", tries.attempt) from None
                if after == "fail":
                    raise
                await self.retry_pause(err, tries, delay)
                tries = replace(tries, attempt=tries.attempt + 1)

    async def _stream_once(
        self, request: ModelRequest, executor: StreamingToolExecutor, out: Streamed, window: int
    ) -> None:
        """One attempt: publish deltas and completed blocks as they arrive, hand each complete
        tool_use to the executor, and record the message, its stop reason and usage in `out`."""
        emit = self.emit
        threshold = self.compaction.auto_compact_threshold(window, request.max_tokens)
        text_parts = out.text_parts
        open_types = out.open_types
        async for event in self.model.stream(request):
            kind = type(event)
            if kind is BlockDelta:
                if event.kind == "text":
                    text_parts.setdefault(event.index, []).append(event.text)
                    out.published = True
                    emit(ev.TextDelta(index=event.index, text=event.text))
                elif event.kind == "thinking":
                    out.published = True
                    emit(ev.ThinkingDelta(index=event.index, text=event.text))
            elif kind is BlockStart:
                open_types[event.index] = event.block.get("type", "")
                text_parts[event.index] = []
            elif kind is BlockStop:
                block = event.block
                out.completed[event.index] = block
                open_types.pop(event.index, None)
                out.published = True
                emit(ev.BlockCompleted(index=event.index, block=_public_block(block)))
                if block.get("type") == "tool_use":
                    executor.add_tool(block)
            elif kind is MessageStart:
                emit(_usage_event(dict(event.usage), window, threshold))
            elif kind is MessageDelta:
                out.usage = event.usage
            elif kind is MessageStop:
                out.message = event.message
                out.stop_reason = event.stop_reason
                out.usage = event.usage
            elif kind is StreamNotice:
                emit(ev.Notice(kind="info", message=event.message))
        if out.message is None:
            raise ModelError("connection", "The stream ended without a message_stop event", mid_stream=True)
        add_usage(self.usage_totals, out.usage)
        add_usage(self.usage_by_model.setdefault(request.model, {}), out.usage)
        emit(_usage_event(out.usage, window, threshold))

    async def retry_pause(self, err: ModelError, tries: Tries, delay: float) -> None:
        """Say a failed request will be retried (one line per request, updated in place), then
        wait `delay` (raises `Aborted` on abort)."""
        where = " mid-stream" if err.mid_stream else ""
        self.emit(
            ev.Notice(
                kind="retry",
                message=(
                    f"{_short_error(err)}{where}; retrying in {delay:.1f}s "
                    f"(attempt {tries.failures}/{self.retry.max_retries})"
                ),
                id=tries.notice_id,
            )
        )
        await until_aborted(asyncio.sleep(delay), self.abort)

    def discard(self, streamed: Streamed, reason: str) -> None:
        """Tell front ends an attempt's output is not part of the conversation (when they saw any)."""
        if streamed.published:
            self.emit(ev.AttemptDiscarded(turn=streamed.turn, attempt=streamed.attempt, reason=reason))

    def after_failure(self, model: str, err: ModelError, tries: Tries) -> tuple[str, float]:
        """What follows a failed request ("fallback", "retry" or "fail") and the retry's delay.

        Retries are bounded by count and by the time since the request's first attempt;
        a request that runs out of time says so in `err.gave_up`."""
        fallback = self.fallback_model
        if tries.overloaded >= MAX_CONSECUTIVE_OVERLOADED and fallback and fallback != model:
            return "fallback", 0.0
        delay = self.retry.delay(tries.failures, err.retry_after)
        elapsed = self.retry.clock() - (tries.started if tries.started is not None else self.retry.clock())
        in_time = elapsed + delay <= self.retry.max_elapsed
        if err.retryable and tries.failures <= self.retry.max_retries and in_time:
            return "retry", delay
        if err.retryable and not in_time:
            attempts = f"{tries.failures} attempt{'s' if tries.failures != 1 else ''}"
            err.gave_up = f"gave up after {attempts} in {elapsed:.0f}s"
        return "fail", delay


def _usage_event(usage: dict[str, int], window: int, threshold: int) -> ev.Usage:
    context = (
        usage.get("input_tokens", 0)
        + usage.get("cache_read_input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0)
        + usage.get("output_tokens", 0)
    )
    return ev.Usage(
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cache_read_input_tokens=usage.get("cache_read_input_tokens", 0),
        cache_creation_input_tokens=usage.get("cache_creation_input_tokens", 0),
        context_tokens=context,
        context_window=window,
        auto_compact_threshold=threshold,
    )


async def until_aborted(awaitable: Any, abort: asyncio.Event) -> Any:
    """Await `awaitable` unless the user aborts first (then raise `Aborted`)."""
    return await race_abort(awaitable, abort, Aborted())


def fallback_notice(from_model: str, to_model: str) -> ev.Notice:
    return ev.Notice(kind="fallback", message=f"Switched to {to_model} due to high demand for {from_model}")


def _public_block(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if not k.startswith("_")}


_retry_ids = itertools.count(1)
# Transport messages that already say what failed and where ("Connection refused (host:port)").
_NAMES_THE_HOST = ("Connection refused", "Cannot connect", "Connection timed out")


def _short_error(err: ModelError) -> str:
    if err.kind in ("connection", "timeout") and not err.mid_stream and err.message.startswith(_NAMES_THE_HOST):
        return err.message
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


def describe_model_error(
    err: ModelError, model: str, compaction_failure: str | None = None, *, hint: str | None = None
) -> str:
    """The error result's text, by the error's kind; `hint` says what to check for credentials
    (the client knows).  The server's message ends in one full stop whatever it ended in."""
    said = err.message.rstrip().rstrip(".")
    status = f" ({err.status})" if err.status and err.status != 200 else ""
    if err.kind == "prompt_too_long":
        if compaction_failure is not None:
            why = f"Compacting the conversation failed: {compaction_failure.rstrip('.')}. "
        else:
            why = "It is still too long after compacting the conversation. "
        return (
            f"Prompt is too long for {model}: {said}. {why}"
            "Start a new conversation with /clear, or send a shorter request."
        )
    if err.kind == "auth":
        check = hint or "Check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)."
        return f"Authentication failed{status}: {said}. {check}"
    if err.kind == "permission":
        return f"Permission denied by the API{status}: {said}. {hint or 'Check ANTHROPIC_API_KEY.'}"
    if err.kind == "not_found":
        check = f"Check --model. {hint}" if hint else "Check --model and ANTHROPIC_BASE_URL."
        return f"Model or endpoint not found{status}: {said}. {check}"
    if err.retryable:
        label = _short_error(err)
        detail = label if label == err.message else f"{label}: {said}"
        return f"{detail} ({err.gave_up or 'gave up after retries'})"
    label = {"invalid_request": "Invalid request", "refusal": "The model declined"}.get(err.kind, "API error")
    return f"{label}{status}: {said}."
