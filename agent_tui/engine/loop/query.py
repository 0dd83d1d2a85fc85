"""The query loop (docs/architecture.md §3): one explicit `State` per iteration, a named
`Transition` for every continue, a named `Terminal` for every return.

`query()` publishes every event through `emit` (the bus) and returns its
`Terminal`.  (Python async generators cannot return a value, so the loop is a
coroutine that publishes, rather than a generator that yields and returns.)

One iteration: pre-process the history (engine/context/pipeline.py: tool-result budget
-> microcompact -> autocompact) -> stream the model call, handing each
completed tool_use to the executor while the stream runs -> no tool_use:
`completed` -> collect results in block order -> append the assistant message
and one user message with every tool_result -> `next_turn`.

`query()` runs one phase after another (`_Query`: pre_process, stream, take_answer,
run_tools, recover, decide_next); each returns the `State` to continue with, a
`Terminal`, or None to go on.  Streaming one request, attempt by attempt (retries,
the fallback model, what a failure says), is attempts.py.

Recovery paths are continues with their own transition: a cut-off answer is
asked again with a larger output limit (`max_output_tokens_escalate`), then
nudged (`max_output_tokens_recovery`); a prompt that is too long is compacted
once (`reactive_compact_retry`); three overloaded errors in a row switch to the
fallback model (`fallback_retry`); a token budget nudges the model to wrap up
(`token_budget_continuation`).

A tool that started is never dropped by a recovery: when a stream fails (or is
cut off) after handing tools to the executor, the answer up to that point and
the tools' real results stay in the history and the recovery continues from
there.  Only an attempt whose tools never started is discarded
(`attempt_discarded`), and asked again with a larger limit (`max_output_tokens`
stop; never when the user set the limit) or retried (a failed stream).
"""

from __future__ import annotations

import asyncio
import enum
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...tools.base import Tool, ToolContext, tools_by_name
from .. import events as ev
from ..bus import child_emitter
from ..context.compaction import CompactionFailed, CompactionInterrupted, compact_conversation
from ..context.pipeline import prepare, shrink
from ..context.window import CompactionSettings, ContextTracking, PipelineEnv
from ..hooks import HookOutcome, HookRunner, stop_hook_block_cap
from ..images import ImageCheck, check_images, image_error_message
from ..memo import HistoryMemo
from ..messages import (
    INTERRUPTED_FOR_TOOL_USE,
    INTERRUPTED_MESSAGE,
    Message,
    assistant_message,
    normalize_for_api,
    strip_thinking_signatures,
    text_block,
    user_message,
)
from ..models.base import ModelClient, ModelError, context_window_for, output_cap_for
from ..models.stream import DEFAULT_MAX_TOKENS, ModelRequest
from ..permissions.policy import PermissionPolicy
from ..server_tools import request_tools
from .attempts import (
    Aborted,
    Attempts,
    FallbackTriggered,
    RetryPolicy,
    Streamed,
    Tries,
    describe_model_error,
    fallback_notice,
    until_aborted,
)
from .budget import BudgetTracking, BudgetVerdict, check_token_budget
from .executor import ExecutorOptions, StreamingToolExecutor


class Transition(str, enum.Enum):
    NEXT_TURN = "next_turn"
    MAX_OUTPUT_TOKENS_ESCALATE = "max_output_tokens_escalate"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    TOKEN_BUDGET_CONTINUATION = "token_budget_continuation"
    FALLBACK_RETRY = "fallback_retry"
    # The API paused a long turn (server tools): the paused answer is sent back to go on.
    PAUSE_TURN_CONTINUATION = "pause_turn_continuation"


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
    # --max-budget-tokens spent, or diminishing returns while wrapping up.
    TOKEN_BUDGET = "token_budget"
    # An image the API cannot take (too large after resizing, corrupt, unsupported).
    IMAGE_ERROR = "image_error"
    # --max-budget-usd: the session has cost that much (checked before each request after the first).
    MAX_BUDGET_USD = "max_budget_usd"
    # --json-schema: the model ended without the structured output, however often it was asked (the session).
    MAX_STRUCTURED_OUTPUT_RETRIES = "max_structured_output_retries"


# A hook's deliberate stop ends the query as intended, not as a failure (as in Claude Code).
SUCCESSFUL_ENDS = frozenset(
    {TerminalReason.COMPLETED, TerminalReason.STOP_HOOK_PREVENTED, TerminalReason.HOOK_STOPPED}
)


@dataclass(frozen=True, slots=True)
class State:
    messages: tuple[Message, ...]
    turn_count: int = 1
    transition: Transition | None = None
    max_output_tokens_override: int | None = None
    max_output_tokens_recovery_count: int = 0
    has_attempted_reactive_compact: bool = False
    stop_hook_active: bool = False
    # Stop-hook blocks since the model last ran a tool (capped like Claude Code's).
    stop_hook_blocks: int = 0
    auto_compact_tracking: ContextTracking = ContextTracking()
    # The model requests go to (the fallback model after `fallback_retry`).
    model: str = ""
    # The system prompt (memory files are re-read after a compaction).
    system: str | list[dict[str, Any]] = ""
    token_budget: BudgetTracking = BudgetTracking()
    # Where the next request's attempts stand (retry budget, fallback trigger, attempt number).
    tries: Tries = Tries()


@dataclass(frozen=True, slots=True)
class Terminal:
    reason: TerminalReason
    messages: list[Message]
    turns: int
    result: str = ""
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    # For the next query of the session: last usage and autocompact failures.
    tracking: ContextTracking = field(default_factory=ContextTracking)

    @property
    def is_error(self) -> bool:
        return self.reason not in SUCCESSFUL_ENDS

    @property
    def refused(self) -> bool:
        """The model declined to answer (the API's `refusal` stop reason)."""
        return self.reason is TerminalReason.MODEL_ERROR and self.error == REFUSAL_MESSAGE


@dataclass(frozen=True)
class QueryParams:
    """One query's settings, fixed for its run; a subagent's are the parent's with `replace()`."""

    messages: list[Message]
    model: ModelClient
    tools: list[Tool]
    policy: PermissionPolicy
    emit: Callable[[ev.Event], None]
    abort: asyncio.Event
    make_context: Callable[[str], ToolContext]
    system: str | list[dict[str, Any]] = ""
    model_name: str = ""
    # The output limit the user set; None: the default, which a cut-off answer may escalate.
    max_tokens: int | None = None
    max_turns: int | None = None
    max_concurrency: int = 10
    context_window: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    parent_tool_use_id: str | None = None
    # A subagent's type (its SubagentStop hooks match on it).
    agent_type: str | None = None
    executor_options: ExecutorOptions | None = None
    hooks: HookRunner | None = None
    # Totals across every request of this query (for the result object).
    usage_totals: dict[str, int] = field(default_factory=dict)
    # The same usage per model name (fallback and compaction included), for the cost.
    usage_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    # Called with each message the loop completes, as it completes (the transcript store).
    on_message: Callable[[Message], None] | None = None
    # Switch to this model after MAX_CONSECUTIVE_OVERLOADED overloaded errors in a row.
    fallback_model: str | None = None
    # --max-budget-tokens: output tokens this query may spend.
    max_budget_tokens: int | None = None
    # --max-budget-usd: what the session may cost; `cost_usd` says what it has cost so far, this
    # query's requests included (None: a model without a price, so the budget cannot be checked).
    max_budget_usd: float | None = None
    cost_usd: Callable[[], float | None] | None = None
    compaction: CompactionSettings | None = None
    # Where the tool-result budget saves large results (default: a temporary folder).
    results_dir: Path | None = None
    # Called after a compaction: re-reads the memory files, returns the system prompt to use.
    reload_system: Callable[[], str | list[dict[str, Any]]] | None = None
    # What the previous query of the session left: last usage, autocompact failures.
    tracking: ContextTracking | None = None
    # cache_control on the static prefix and the newest message (engine/models/caching.py).
    prompt_caching: bool = False
    # Extended thinking: "off" | "adaptive" | a token budget; None: adaptive for Claude models.
    thinking: str | int | None = None
    # output_config.effort, where the model supports it.
    effort: str | None = None
    # Notifications waiting for the model (a background agent's report): added to the next turn's user message.
    take_notifications: Callable[[], list[str]] | None = None
    # What each step made of each history message (engine/memo.py), kept across the session's
    # queries; None: the query keeps its own (a subagent's).
    memo: HistoryMemo | None = None


MAX_OUTPUT_TOKENS_RECOVERY_LIMIT = 3
ESCALATED_MAX_TOKENS = 64_000
MAX_TOKENS_NUDGE = (
    "Output token limit hit. Resume directly — no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. Break remaining work into smaller pieces."
)
# Stop reasons that mean the answer was cut off before its end.
_CUT_OFF = ("max_tokens", "model_context_window_exceeded")


REFUSAL_MESSAGE = "The model declined to answer this request (stop_reason: refusal)."
REFUSAL_NOTE = "[The model declined to continue its previous answer (stop_reason: refusal).]"


def meta_user_message(text: str) -> Message:
    """A user message the engine writes to steer the model; front ends may hide it
    (`_meta` never reaches the API: requests carry only role and content)."""
    return {"role": "user", "content": [text_block(text)], "_meta": True}


def escalated_max_tokens(model: str) -> int:
    return min(ESCALATED_MAX_TOKENS, output_cap_for(model))


async def query(params: QueryParams) -> Terminal:
    """Run the loop until a terminal reason.  Each phase returns the `State` to continue
    with (a named transition), a `Terminal`, or None to go on to the next phase."""
    q = _Query(params)
    state = q.initial_state()
    while True:
        if params.abort.is_set():
            return q.finish(state, TerminalReason.ABORTED_STREAMING, _interrupted_history(list(state.messages)))
        if state.transition is not None and (spent := q.over_budget_usd()) is not None:
            return q.fail(state, TerminalReason.MAX_BUDGET_USD, list(state.messages), spent)
        turn = q.begin_turn(state)
        for phase in (
            q.pre_process,  # (1) tool-result budget -> microcompact -> autocompact
            q.stream,  # (2) the model call; tools start at each tool_use's content_block_stop
            q.take_answer,  # (3) escalate a cut-off answer, or append the answer (none: completed)
            q.run_tools,  # (4) the executor's results, in block order
            q.recover,  # (5) a failed stream's retry or fallback; a cut-off answer's nudge
            q.decide_next,  # (6) no tool_use: stop hooks -> completed; else the next turn
        ):
            step = await phase(turn)
            if step is not None:
                break
        if isinstance(step, Terminal):
            return step
        state = step


def warm_request(params: QueryParams) -> None:
    """What the query's first request does to its history, done ahead and kept in `params.memo`
    (each step's result and each message's JSON: engine/memo.py), so that the request itself
    works on what is new since (docs/architecture.md §3).  `params.messages` ends with a stand-in
    for the prompt.  Nothing is sent, published or stored; proportional to the history, so in a
    worker thread, between prompts (a prompt waits for it: the memo serves one step at a time)."""
    q = _Query(params)
    turn = q.begin_turn(q.initial_state())
    turn.messages = shrink(turn.messages, turn.state.auto_compact_tracking, turn.env, q.memo)[0]
    request = q.checked_request(turn)[1]
    if request is not None:
        params.model.encode(request)


@dataclass
class _Turn:
    """One iteration's working set: the state so far, the history as it grows, the
    request's model and limits, and what the stream produced."""

    state: State
    messages: list[Message]
    model: str
    window: int
    max_tokens: int
    env: PipelineEnv
    request: ModelRequest | None = None
    streamed: Streamed = field(default_factory=Streamed)
    executor: StreamingToolExecutor | None = None
    tool_use_blocks: list[dict[str, Any]] = field(default_factory=list)
    # The answer stopped at the output limit (or the context window).
    cut_off: bool = False
    # The larger output limit a cut-off answer may be asked again with (None: not this time).
    escalate_to: int | None = None


class _Query:
    """One query's fixed parts (its params, tools, the emitter that tags a subagent's events,
    the context pipeline's settings) and the phases of its loop."""

    def __init__(self, params: QueryParams) -> None:
        self.params = params
        self.emit = child_emitter(params.emit, params.parent_tool_use_id)
        self.primary = params.model_name or params.model.name
        # Client tools, and server tools (web search) where this model and the rules allow them.
        self.api_tools = request_tools(params.tools, self.primary, params.policy)
        self.settings = params.compaction or CompactionSettings()
        self.memo = params.memo or HistoryMemo()
        self.base_env = PipelineEnv(
            model=params.model,
            model_name=self.primary,
            window=params.context_window or context_window_for(self.primary),
            max_output=params.max_tokens or DEFAULT_MAX_TOKENS,
            system=params.system,
            tools=self.api_tools,
            settings=self.settings,
            save_dir=params.results_dir or Path(tempfile.gettempdir()) / "agent-tui" / "tool-results",
            emit=self.emit,
            abort=params.abort,
            retry=params.retry,
            usage_totals=params.usage_totals,
            usage_by_model=params.usage_by_model,
            parent_tool_use_id=params.parent_tool_use_id,
            prompt_caching=params.prompt_caching,
            hooks=params.hooks,
        )
        self.attempts = Attempts(
            model=params.model,
            emit=self.emit,
            abort=params.abort,
            retry=params.retry,
            fallback_model=params.fallback_model,
            usage_totals=params.usage_totals,
            usage_by_model=params.usage_by_model,
            compaction=self.settings,
            make_executor=self.executor,
        )

    def initial_state(self) -> State:
        return State(
            messages=tuple(self.params.messages),
            model=self.primary,
            system=self.params.system,
            auto_compact_tracking=self.params.tracking or ContextTracking(),
        )

    # -- endings ---------------------------------------------------------------------------

    def finish(
        self, state: State, reason: TerminalReason, messages: list[Message], error: str | None = None
    ) -> Terminal:
        return Terminal(
            reason=reason,
            messages=messages,
            turns=state.turn_count,
            result=_last_text(messages),
            error=error,
            usage=dict(self.params.usage_totals),
            tracking=state.auto_compact_tracking,
        )

    def fail(self, state: State, reason: TerminalReason, messages: list[Message], text: str) -> Terminal:
        self.emit(ev.Notice(kind="error", message=text))
        return self.finish(state, reason, messages, error=text)

    def interrupted(self, state: State, messages: list[Message]) -> Terminal:
        self.emit(ev.Interrupted(during="streaming"))
        return self.finish(state, TerminalReason.ABORTED_STREAMING, _interrupted_history(messages))

    def next_turn(
        self, state: State, messages: list[Message], transition: Transition, **changes: Any
    ) -> State | Terminal:
        """The state of the next turn, unless the query is out of turns (the one max-turns check)."""
        max_turns = self.params.max_turns
        if max_turns is not None and state.turn_count + 1 > max_turns:
            return self.fail(state, TerminalReason.MAX_TURNS, messages, _max_turns_message(max_turns))
        return replace(
            state, messages=tuple(messages), turn_count=state.turn_count + 1, transition=transition, **changes
        )

    # -- the phases ------------------------------------------------------------------------

    def begin_turn(self, state: State) -> _Turn:
        params = self.params
        model = state.model
        window = params.context_window or context_window_for(model)
        max_tokens = state.max_output_tokens_override or params.max_tokens or DEFAULT_MAX_TOKENS
        if model != self.primary or params.max_tokens is None:
            # Never past the model's known cap (a limit the user set is theirs to choose on the primary).
            max_tokens = min(max_tokens, output_cap_for(model))
        env = replace(self.base_env, model_name=model, window=window, max_output=max_tokens, system=state.system)
        return _Turn(state, list(state.messages), model, window, max_tokens, env)

    async def pre_process(self, turn: _Turn) -> State | Terminal | None:
        """Tool-result budget -> microcompact -> autocompact; blocked when full and autocompact is off."""
        try:
            prepared = await prepare(turn.messages, turn.state.auto_compact_tracking, turn.env, self.memo)
        except CompactionInterrupted:
            return self.interrupted(turn.state, turn.messages)
        turn.messages = prepared.messages
        state = replace(turn.state, auto_compact_tracking=prepared.tracking)
        if prepared.compacted is not None:
            state = replace(state, system=self.reloaded_system(state.system))
        turn.state = state
        if not self.settings.auto and prepared.tokens >= self.settings.blocking_limit(turn.window):
            text = _blocking_limit_message(prepared.tokens, turn.window)
            return self.fail(state, TerminalReason.BLOCKING_LIMIT, turn.messages, text)
        return None

    async def stream(self, turn: _Turn) -> State | Terminal | None:
        """Stream the request, retrying what is retryable; a fallback or a reactive compact
        continues the loop, an abort or an error that cannot be recovered ends it."""
        state = turn.state
        # Proportional to the history: in a worker thread, never on the event loop's (the TUI draws there).
        images, turn.request = await asyncio.to_thread(self.checked_request, turn)
        if images.problems:
            return self.fail(state, TerminalReason.IMAGE_ERROR, images.messages, image_error_message(images.problems))
        try:
            turn.streamed, turn.executor = await self.attempts.stream(
                turn.request, state.turn_count, turn.window, state.tries
            )
        except Aborted as aborted:
            return await self.aborted_streaming(state, turn.messages, aborted)
        except FallbackTriggered as fallback:
            self.emit(fallback_notice(fallback.from_model, fallback.to_model))
            # Thinking signatures are bound to the model that wrote them: replayed to another, they 400.
            return replace(
                state,
                messages=tuple(strip_thinking_signatures(turn.messages)),
                model=fallback.to_model,
                transition=Transition.FALLBACK_RETRY,
                auto_compact_tracking=state.auto_compact_tracking.forget_usage(),
                tries=Tries(attempt=fallback.attempt + 1),
            )
        except ModelError as err:
            return await self.after_model_error(turn, err)
        return None

    async def take_answer(self, turn: _Turn) -> State | Terminal | None:
        """A cut-off answer whose tools never started is asked again with a larger limit;
        otherwise the answer joins the history (an empty one completes the query)."""
        state, streamed, messages = turn.state, turn.streamed, turn.messages
        assert turn.executor is not None
        # A stream that failed after tools started is kept up to the failure: the tools run to
        # their real results, then the failure's retry or fallback follows (in `recover`).
        failed = streamed.error
        if failed is None:
            assert streamed.message is not None
            content = streamed.message["content"]
        else:
            content = streamed.partial_content()
        turn.tool_use_blocks = [b for b in content if b.get("type") == "tool_use"]
        turn.cut_off = failed is None and streamed.stop_reason in _CUT_OFF
        turn.escalate_to = self.escalation(state, turn)
        tracking = state.auto_compact_tracking
        if (
            streamed.stop_reason == "max_tokens"
            and turn.escalate_to is not None
            and state.max_output_tokens_recovery_count == 0
            and not turn.executor.started_any
        ):
            # Silently ask again with a larger output limit; the cut answer is dropped.
            self.attempts.discard(streamed, "escalation")
            return replace(
                state,
                messages=tuple(messages),
                max_output_tokens_override=turn.escalate_to,
                transition=Transition.MAX_OUTPUT_TOKENS_ESCALATE,
                auto_compact_tracking=tracking.with_usage(streamed.usage, len(messages), output=False),
                tries=Tries(attempt=streamed.attempt + 1),
            )
        if failed is None:
            turn.state = state = replace(
                state,
                auto_compact_tracking=tracking.with_usage(streamed.usage, len(messages) + (1 if content else 0)),
                tries=Tries(),
            )
        refused = failed is None and streamed.stop_reason == "refusal" and not turn.tool_use_blocks
        if content:
            messages.append(streamed.message if failed is None else assistant_message(content))
            self.completed(messages[-1])
            if refused:
                return self.refused(state, messages)
            if failed is None and streamed.stop_reason == "pause_turn" and not turn.tool_use_blocks:
                return self.next_turn(state, messages, Transition.PAUSE_TURN_CONTINUATION)
            return None
        # Refusal or an empty answer: nothing to append (an empty assistant message is invalid).
        if refused:
            return self.refused(state, messages)
        return None if turn.cut_off else self.finish(state, TerminalReason.COMPLETED, messages)

    def refused(self, state: State, messages: list[Message]) -> Terminal:
        """A refusal is an error result, whatever text came before it; the history notes it,
        so the next prompt's request shows why the answer stopped."""
        messages.append(meta_user_message(REFUSAL_NOTE))
        self.completed(messages[-1])
        return self.fail(state, TerminalReason.MODEL_ERROR, messages, REFUSAL_MESSAGE)

    async def run_tools(self, turn: _Turn) -> Terminal | None:
        """The tools' results, in block order, as one user message; an abort, a "no" or a
        hook's stop ends the query."""
        if not turn.tool_use_blocks:
            return None
        state, messages, executor = turn.state, turn.messages, turn.executor
        assert executor is not None
        try:
            results = await until_aborted(executor.results(), self.params.abort)
        except Aborted:
            self.emit(ev.Interrupted(during="tools"))
            results = await executor.abort()
            messages.append(user_message(results + [text_block(INTERRUPTED_FOR_TOOL_USE)]))
            return self.finish(state, TerminalReason.ABORTED_TOOLS, messages)
        if executor.rejected:
            # The person answered "no": the turn ends and the prompt is theirs (as in Claude Code).
            self.emit(ev.Interrupted(during="tools"))
            messages.append(user_message(results + [text_block(INTERRUPTED_FOR_TOOL_USE)]))
            self.completed(messages[-1])
            return self.finish(state, TerminalReason.ABORTED_TOOLS, messages)
        notes = self.params.take_notifications() if self.params.take_notifications is not None else []
        messages.append(user_message(results + [text_block(note) for note in notes]))
        self.completed(messages[-1])
        if executor.hook_stop is not None:
            self.emit(ev.Notice(kind="hook", message=f"Stopped by a hook: {executor.hook_stop}"))
            return self.finish(state, TerminalReason.HOOK_STOPPED, messages, error=executor.hook_stop)
        return None

    async def recover(self, turn: _Turn) -> State | Terminal | None:
        """A stream that failed after its tools started is retried (or falls back) from the
        kept results; a cut-off answer is nudged to go on, up to the recovery limit."""
        state, messages = turn.state, turn.messages
        if turn.streamed.error is not None:
            return await self.retry_failed_stream(turn, turn.streamed.error)
        if not turn.cut_off:
            return None
        # Keep the partial answer (a truncated tool_use never reached the executor) and nudge.
        if state.max_output_tokens_recovery_count >= MAX_OUTPUT_TOKENS_RECOVERY_LIMIT:
            return self.fail(state, TerminalReason.MAX_OUTPUT_TOKENS, messages, _max_tokens_message(turn.max_tokens))
        messages.append(meta_user_message(MAX_TOKENS_NUDGE))
        self.completed(messages[-1])
        return replace(
            state,
            messages=tuple(messages),
            transition=Transition.MAX_OUTPUT_TOKENS_RECOVERY,
            max_output_tokens_recovery_count=state.max_output_tokens_recovery_count + 1,
            # Tools ran, so the cut answer could not be asked again: the nudge gets the larger limit.
            max_output_tokens_override=turn.escalate_to or state.max_output_tokens_override,
        )

    async def decide_next(self, turn: _Turn) -> State | Terminal:
        """No tool_use: the stop hooks decide; else the next turn (the token budget may nudge or stop)."""
        state, messages = turn.state, turn.messages
        if not turn.tool_use_blocks:
            return await self.stop_or_continue(state, messages)
        following = self.next_turn(
            state,
            messages,
            Transition.NEXT_TURN,
            max_output_tokens_override=None,
            max_output_tokens_recovery_count=0,
            has_attempted_reactive_compact=False,
            stop_hook_blocks=0,
        )
        verdict = self.budget_verdict(state)
        if isinstance(following, Terminal) or verdict is None:
            return following
        if verdict.action == "stop":
            return self.fail(state, TerminalReason.TOKEN_BUDGET, messages, verdict.message)
        if verdict.action == "nudge":
            messages.append(meta_user_message(verdict.message))
            self.completed(messages[-1])
            return replace(
                following,
                messages=tuple(messages),
                transition=Transition.TOKEN_BUDGET_CONTINUATION,
                token_budget=verdict.tracking,
            )
        return following

    # -- what the phases share -------------------------------------------------------------

    def checked_request(self, turn: _Turn) -> tuple[ImageCheck, ModelRequest | None]:
        """The images check, then (when it passes) the turn's request."""
        images = check_images(turn.messages, self.memo)
        return images, None if images.problems else self.request(turn)

    def request(self, turn: _Turn) -> ModelRequest:
        """The turn's request in the neutral vocabulary; the client makes its provider's
        details of it (the Messages API's thinking object and beta headers: models/thinking.py)."""
        params = self.params
        return ModelRequest(
            model=turn.model,
            messages=normalize_for_api(turn.messages, self.memo),
            system=turn.state.system,
            tools=self.api_tools,
            max_tokens=turn.max_tokens,
            reasoning=params.thinking,
            effort=params.effort,
            prompt_caching=params.prompt_caching,
            memo=self.memo,
        )

    def executor(self, model: str) -> StreamingToolExecutor:
        params = self.params

        def make_context(tool_use_id: str) -> ToolContext:
            # Tools (the Agent tool) see the model in use, the fallback model after a fallback.
            return replace(params.make_context(tool_use_id), model=model)

        return StreamingToolExecutor(
            tools_by_name(params.tools),
            policy=params.policy,
            emit=params.emit,
            make_context=make_context,
            options=params.executor_options
            or ExecutorOptions(max_concurrency=params.max_concurrency, parent_tool_use_id=params.parent_tool_use_id),
            hooks=params.hooks,
        )

    def escalation(self, state: State, turn: _Turn) -> int | None:
        """The larger limit a cut-off answer may be asked again with: only from the default
        limit (a limit the user set is honoured as is), and only when it is larger."""
        escalate_to = escalated_max_tokens(turn.model)
        if (
            not self.params.model.escalates_output
            or self.params.max_tokens is not None
            or state.max_output_tokens_override is not None
            or escalate_to <= turn.max_tokens
        ):
            return None
        return escalate_to

    async def aborted_streaming(self, state: State, messages: list[Message], aborted: Aborted) -> Terminal:
        """The answer streamed so far is kept, with the results of the tools it started."""
        self.emit(ev.Interrupted(during="streaming"))
        content = aborted.streamed.partial_content() if aborted.streamed is not None else []
        if not content or aborted.executor is None:
            return self.finish(state, TerminalReason.ABORTED_STREAMING, _interrupted_history(messages))
        results = await aborted.executor.abort()
        messages.append(assistant_message(content))
        if results:
            messages.append(user_message(results + [text_block(INTERRUPTED_FOR_TOOL_USE)]))
        else:
            messages.append(user_message(INTERRUPTED_MESSAGE))
        return self.finish(state, TerminalReason.ABORTED_STREAMING, messages)

    async def after_model_error(self, turn: _Turn, err: ModelError) -> State | Terminal:
        """A prompt that is too long is compacted once and retried; any other error ends the query."""
        state, messages = turn.state, turn.messages
        failure = None
        if err.kind == "prompt_too_long" and not state.has_attempted_reactive_compact:
            try:
                compacted = await compact_conversation(messages, turn.env, trigger="reactive", overflow=err.message)
            except CompactionInterrupted:
                return self.interrupted(state, messages)
            except CompactionFailed as exc:
                failure = str(exc)
            else:
                return replace(
                    state,
                    messages=tuple(compacted.messages),
                    system=self.reloaded_system(state.system),
                    transition=Transition.REACTIVE_COMPACT_RETRY,
                    has_attempted_reactive_compact=True,
                    auto_compact_tracking=ContextTracking(
                        compact_failures=state.auto_compact_tracking.compact_failures
                    ),
                )
        reason = TerminalReason.PROMPT_TOO_LONG if err.kind == "prompt_too_long" else TerminalReason.MODEL_ERROR
        hint = self.params.model.credential_hint
        return self.fail(state, reason, messages, describe_model_error(err, turn.model, failure, hint=hint))

    async def retry_failed_stream(self, turn: _Turn, failed: ModelError) -> State | Terminal:
        """The kept tools' results are in the history; the failed request is retried from there."""
        state, messages, tries = turn.state, turn.messages, turn.streamed.tries
        assert turn.request is not None
        after, delay = self.attempts.after_failure(turn.request.model, failed, tries)
        next_model = state.model
        if after == "fallback":
            next_model = self.params.fallback_model or state.model
            self.emit(fallback_notice(turn.request.model, next_model))
            messages = strip_thinking_signatures(messages)
        elif after == "fail":
            text = describe_model_error(failed, turn.model, hint=self.params.model.credential_hint)
            return self.fail(state, TerminalReason.MODEL_ERROR, messages, text)
        else:
            try:
                await self.attempts.retry_pause(failed, tries, delay)
            except Aborted:
                return self.interrupted(state, messages)
        fallback = after == "fallback"
        tracking = state.auto_compact_tracking
        return self.next_turn(
            state,
            messages,
            Transition.FALLBACK_RETRY if fallback else Transition.NEXT_TURN,
            model=next_model,
            auto_compact_tracking=tracking.forget_usage() if fallback else tracking,
            max_output_tokens_override=None,
            max_output_tokens_recovery_count=0,
            has_attempted_reactive_compact=False,
            # The retry budget runs on (a fallback starts its own); the attempt number restarts with the turn.
            tries=Tries() if fallback else replace(tries, attempt=1),
        )

    async def stop_or_continue(self, state: State, messages: list[Message]) -> State | Terminal:
        """Where the model stopped: the stop hooks may end the query, let it complete, or
        block the stop with feedback that becomes the next turn's instruction."""
        stop = await self.stop_hooks(state, messages)
        if stop is not None and stop.prevent_continuation:
            text = stop.stop_reason or f"A {stop.event} hook ended the query"
            self.emit(ev.Notice(kind="hook", message=text))
            return self.finish(state, TerminalReason.STOP_HOOK_PREVENTED, messages, error=text)
        # The budget is checked where the model stops too, not only when it asks for another turn.
        # (Diminishing returns only stops a query that would go on: one the hook continues.)
        verdict = self.budget_verdict(state)
        hook_continues = stop is not None and stop.blocked
        if verdict is not None and verdict.action == "stop" and (hook_continues or verdict.spent):
            return self.fail(state, TerminalReason.TOKEN_BUDGET, messages, verdict.message)
        if stop is None or not stop.blocked:
            return self.finish(state, TerminalReason.COMPLETED, messages)
        cap = stop_hook_block_cap()
        if 0 < cap <= state.stop_hook_blocks:
            text = (
                f"A {stop.event} hook blocked the turn from ending {cap + 1} consecutive times; "
                "overriding it and ending the turn. A Stop hook should exit 0 when stop_hook_active "
                "is true (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP changes the limit)."
            )
            self.emit(ev.Notice(kind="hook", message=text))
            return self.finish(state, TerminalReason.COMPLETED, messages)
        # The hook wants more work: its reason is the model's next instruction.
        messages.append(user_message(f"{stop.event} hook feedback:\n{stop.reason}"))
        self.completed(messages[-1])
        if verdict is not None and verdict.action == "nudge":
            messages.append(meta_user_message(verdict.message))
            self.completed(messages[-1])
            state = replace(state, token_budget=verdict.tracking)
        return self.next_turn(
            state,
            messages,
            Transition.STOP_HOOK_BLOCKING,
            stop_hook_active=True,
            stop_hook_blocks=state.stop_hook_blocks + 1,
            max_output_tokens_override=None,
        )

    def over_budget_usd(self) -> str | None:
        """Why no further request is made: `--max-budget-usd` is spent (None: within it, or no budget)."""
        params = self.params
        if params.max_budget_usd is None or params.cost_usd is None:
            return None
        cost = params.cost_usd()
        if cost is None or cost < params.max_budget_usd:
            return None
        return f"Reached the maximum budget (${params.max_budget_usd:g}; spent ${cost:.4f})"

    def budget_verdict(self, state: State) -> BudgetVerdict | None:
        """The `--max-budget-tokens` verdict on what this query has spent (None: no budget)."""
        params = self.params
        if not params.max_budget_tokens:
            return None
        spent = params.usage_totals.get("output_tokens", 0)
        return check_token_budget(params.max_budget_tokens, spent, state.token_budget)

    def reloaded_system(self, current: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
        return self.params.reload_system() if self.params.reload_system is not None else current

    async def stop_hooks(self, state: State, messages: list[Message]) -> HookOutcome | None:
        """Stop hooks (SubagentStop in a subagent) where the loop would complete; None when none ran."""
        params = self.params
        if params.hooks is None:
            return None
        fields: dict[str, Any] = {
            "stop_hook_active": state.stop_hook_active,
            "last_assistant_message": _last_text(messages),
        }
        event = "Stop"
        if params.parent_tool_use_id:
            event = "SubagentStop"
            fields.update(agent_id=params.parent_tool_use_id, agent_type=params.agent_type or "")
        outcome = await params.hooks.run(
            event,
            fields,
            abort=params.abort,
            parent_tool_use_id=params.parent_tool_use_id,
        )
        return None if outcome.aborted or not outcome.runs else outcome

    def completed(self, message: Message) -> None:
        if self.params.on_message is not None:
            self.params.on_message(message)

def _interrupted_history(messages: list[Message]) -> list[Message]:
    return messages + [user_message(INTERRUPTED_MESSAGE)]


def _last_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m["role"] == "assistant":
            return "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
    return ""


def _max_turns_message(max_turns: int) -> str:
    return f"Reached the maximum number of turns ({max_turns})."


def _max_tokens_message(max_tokens: int) -> str:
    return (
        f"The response was cut off at the output token limit ({max_tokens} tokens). "
        "Ask for a shorter answer or break the work into smaller steps."
    )


def _blocking_limit_message(tokens: int, window: int) -> str:
    return (
        f"The context is {tokens * 100 // window}% full ({tokens:,} of {window:,} tokens) and auto-compact "
        "is off. Run /compact to summarise the conversation, or /clear to start a new one."
    )


