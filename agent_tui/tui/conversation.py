"""The conversation as the screen shows it: what each bus event does to the view.

The app holds one `Conversation`.  It owns the turn and answer state (the tool
and turn records, the answer being streamed, prompts waiting their turn, a
compaction in progress) and applies each `EngineEvents` batch in publish order,
live or replayed.  Records of tool calls and turns are stamped with the app's
clock as events arrive; a finished tool keeps the engine's own measure.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.content import Content
from textual.css.query import NoMatches
from textual.widgets import Static

from ..engine import events as ev
from ..tools.websearch import describe_server_block
from . import collector
from .mentions import Prompt
from .state import CompactionStatus, ToolRecord, ToolStatus, TurnRecord, display_summary, dom_id
from .streaming import TextRun
from .widgets.gauge import SPINNER, Gauge
from .widgets.permission import PermissionPrompt
from .widgets.thinking import ThinkingBlock
from .widgets.timeline import Timeline, TimelineStrip
from .widgets.tool_call import ToolCall
from .widgets.transcript import Notice, Transcript, UserPrompt

if TYPE_CHECKING:
    from ..engine import Session

# Suffixes for the widgets of a tool_use id seen twice (a misbehaving server).
_REPEATS = itertools.count(2)
# Events that end a retry's wait: the answer is coming (or the query is over).
_RETRY_OVER = frozenset({ev.TextDelta, ev.ThinkingDelta, ev.BlockCompleted, ev.ToolQueued, ev.QueryFinished})


class Conversation:
    """Turn and answer state, and the bus-event handlers that keep the view in step with it."""

    def __init__(
        self,
        app: App[Any],
        session: Session | None,
        clock: Callable[[], float],
        refresh_header: Callable[[], None],
        *,
        history_of: Conversation | None = None,
        cwd: Path | None = None,
    ) -> None:
        self._app = app
        # None while a resumed session's last screen is drawn before the engine loads (`cwd` given then).
        self.session = session
        self._cwd = cwd
        self.clock = clock
        self._refresh_header = refresh_header
        # Looked up once: handlers and the ticker run until the very end of the app.
        self.transcript = app.query_one(Transcript)
        self.timeline = app.query_one(Timeline)
        self.timeline_strip = app.query_one(TimelineStrip)
        self.gauge = app.query_one(Gauge)
        if history_of is not None:
            # Loads the older part of a resumed session into a transcript, a timeline and a gauge of its own,
            # as data; `history_of` takes them in front of what it shows (`take_history`).
            self.transcript, self.timeline, self.gauge = Transcript(), Timeline(clock), Gauge(clock)
            self.transcript.loading = self.timeline.loading = True
        self.permission = app.query_one(PermissionPrompt)
        self._queued_view = app.query_one("#queued", Static)
        self._activity_line = app.query_one("#activity", Static)
        # Prompts typed while a turn runs, shown as queued until the session takes them.
        self.queued: deque[Prompt] = deque()
        self.tool_records: dict[str, ToolRecord] = {}
        self._turn: TurnRecord | None = None
        self._text_run: TextRun | None = None
        self._thinking: ThinkingBlock | None = None
        # Notices shown so far that carry an id (a request's retries), to update in place.
        self._notice_rows: dict[str, Notice] = {}
        # Tags the transcript entries of the current request's attempt (text, thinking): taken back if it is discarded.
        self._attempt: object = object()
        self._error_shown = False
        self._interrupt_shown = False
        self._output_base = 0
        self._stream_chars = 0
        # A compaction in progress (manual or automatic); None otherwise.
        self.compacting: CompactionStatus | None = None
        # The request being retried, as its retry notice says; shown on the activity line until the
        # answer comes (or the turn ends), never left in the transcript.
        self._retrying: str | None = None

    @property
    def cwd(self) -> Path:
        return self.session.cwd if self.session is not None else self._cwd or Path.cwd()

    @property
    def running(self) -> bool:
        return self.session is not None and self.session.running

    def take_history(self, older: Conversation) -> None:
        """Put what `older` loaded (the start of a resumed session) before what this one shows."""
        self.tool_records = {**older.tool_records, **self.tool_records}
        self.transcript.prepend(older.transcript)
        self.timeline.prepend(older.timeline)

    async def handle(self, events: Iterable[ev.Event]) -> None:
        """Apply a batch of bus events, in publish order."""
        for event in events:
            if self._retrying is not None and type(event) in _RETRY_OVER:
                self._retrying = None
                self._refresh_activity_line()
            handler = self._HANDLERS.get(type(event))
            if handler is not None:
                await handler(self, event)
        self.gauge.activity = self.activity()

    async def _on_session_started(self, event: ev.SessionStarted) -> None:
        self._refresh_header()

    async def _on_user_message(self, event: ev.UserMessage) -> None:
        if event.notification:
            self.gauge.start()
            await self.transcript.add(Notice("A background agent reported; the model reads its report.", kind="info"))
            return
        # What start-up made lives as long as the app: no collection walks it from now on.
        collector.freeze_start_up()
        prompt = self.queued.popleft() if self.queued else Prompt(event.text)
        self.show_queued()
        self._error_shown = self._interrupt_shown = False
        self._output_base = self._stream_chars = 0
        self.gauge.start()
        transcript = self.transcript
        transcript.follow()
        await transcript.add(partial(UserPrompt, prompt.text, prompt.attachment_labels))

    async def _on_request_started(self, event: ev.RequestStarted) -> None:
        if event.parent_tool_use_id:
            return
        await self._end_text_run()
        if self._turn is not None and self._turn.number == event.turn:
            return  # the same turn asked again (a retry): one timeline row
        self._close_turn()
        self._turn = TurnRecord(number=event.turn, started_at=self.clock())
        self._attempt = object()
        self._stream_chars = 0
        self.gauge.turns = event.turn
        self.timeline.add_turn(self._turn)
        self.refresh_strip()

    async def _on_text_delta(self, event: ev.TextDelta) -> None:
        if event.parent_tool_use_id:
            return
        run = self._text_run
        if run is None or run.index != event.index:
            await self._end_text_run()
            run = TextRun(self.transcript, event.index, self._attempt)
            self._text_run = run
        await run.write(event.text)
        # The gauge's estimate follows on the next tick (it redraws at that pace anyway).
        self._stream_chars += len(event.text)

    async def _on_thinking_delta(self, event: ev.ThinkingDelta) -> None:
        if event.parent_tool_use_id:
            return
        if self._thinking is None:
            await self._end_text_run()
            self._thinking = ThinkingBlock()
            await self.transcript.add(self._thinking, tag=self._attempt)
        self._thinking.add(event.text)
        self._stream_chars += len(event.text)

    async def _on_block_completed(self, event: ev.BlockCompleted) -> None:
        if event.parent_tool_use_id:
            return
        kind = event.block.get("type")
        if kind == "text":
            await self._end_text_run()
        elif kind in ("thinking", "redacted_thinking") and self._thinking is not None:
            self._thinking.finish()
            self._thinking = None
        elif (line := describe_server_block(event.block)) is not None:
            # A web search the API ran inside the answer: one line where it happened.
            await self._end_text_run()
            await self.transcript.add(partial(Notice, line, kind="web"))

    async def _on_attempt_discarded(self, event: ev.AttemptDiscarded) -> None:
        """The attempt's text and thinking are not part of the conversation: take them off the screen."""
        if event.parent_tool_use_id:
            return
        await self._end_text_run()
        self._thinking = None
        doomed, self._attempt = self._attempt, object()
        await self.transcript.discard(doomed)
        self._stream_chars = 0
        self.gauge.output_tokens = self._output_base

    async def _on_tool_queued(self, event: ev.ToolQueued) -> None:
        record = ToolRecord(
            tool_use_id=event.tool_use_id,
            name=event.name,
            summary=display_summary(event.summary, event.input, self.cwd),
            input=event.input,
            queued_at=self.clock(),
            turn=self._turn,
            parent_tool_use_id=event.parent_tool_use_id,
        )
        if record.tool_use_id in self.tool_records:
            record.key = f"{record.tool_use_id}-{next(_REPEATS)}"
        self.tool_records[record.tool_use_id] = record
        if self._turn is not None:
            self._turn.tools.append(record.tool_use_id)
        self.timeline.add_tool(record)
        self.refresh_strip()
        if not event.parent_tool_use_id:
            await self._end_text_run()
            # Made when the transcript mounts it (soon unless a session is loading or the view is far up;
            # the rows of a burst together: `add_soon`).
            self.transcript.add_soon(partial(ToolCall, record))

    async def _on_tool_started(self, event: ev.ToolStarted) -> None:
        record = self.tool_records.get(event.tool_use_id)
        if record is not None:
            record.status = ToolStatus.RUNNING
            record.started_at = self.clock()
            self.refresh_tool(record)

    async def _on_tool_progress(self, event: ev.ToolProgress) -> None:
        record = self.tool_records.get(event.tool_use_id)
        call = self._tool_call(record) if record is not None else None
        if call is not None:
            call.add_progress(event.text)

    async def _on_tool_finished(self, event: ev.ToolFinished) -> None:
        record = self.tool_records.get(event.tool_use_id)
        if record is None:
            return
        record.status = ToolStatus(event.status)
        now = record.finished_at = self.clock()
        if record.started_at is not None:
            # The engine timed the run; the UI may have heard of its start late, so its bar starts from the measure.
            record.duration = event.duration
            record.started_at = max(record.queued_at, now - event.duration)
        record.preview = event.preview
        record.data = event.data
        record.is_error = event.is_error
        if event.data.get("background") and not event.is_error:
            # A background agent: its row runs on until `background_task` says it ended.
            record.status, record.finished_at = ToolStatus.RUNNING, None
        self.refresh_tool(record)

    async def _on_background_task(self, event: ev.BackgroundTask) -> None:
        if event.status == "running":
            return
        record = self.tool_records.get(event.task_id)
        if record is not None:
            record.status = ToolStatus.DONE if event.status == "completed" else ToolStatus.ERROR
            record.finished_at = self.clock()
            record.duration = event.usage.get("duration_ms", 0) / 1000
            record.is_error = event.status != "completed"
            self.refresh_tool(record)
        if self.running:
            await self.transcript.add(Notice(f"{event.summary}; the model reads its report at its next turn.",
                                             kind="info"))
        else:
            await self.transcript.add(Notice(f"{event.summary}.", kind="info"))
            self._app.deliver_notifications()

    async def _on_permission_requested(self, event: ev.PermissionRequested) -> None:
        record = self.tool_records.get(event.tool_use_id)
        if record is not None:
            record.status = ToolStatus.AWAITING
            self.refresh_tool(record)
        await self.permission.ready()
        self.permission.push(event)

    async def _on_permission_resolved(self, event: ev.PermissionResolved) -> None:
        self.permission.discard(event.tool_use_id)
        record = self.tool_records.get(event.tool_use_id)
        if record is not None and event.feedback:
            record.feedback = event.feedback
            self.refresh_tool(record)

    async def _on_usage(self, event: ev.Usage) -> None:
        if event.parent_tool_use_id:
            return
        gauge = self.gauge
        gauge.context_window = event.context_window
        gauge.threshold = event.auto_compact_threshold
        gauge.context_tokens = event.context_tokens
        turn = self._turn
        if turn is None:
            return
        turn.usage_events += 1
        if turn.usage_events >= 2:
            # The second usage of a request is published when its stream ends.
            turn.stream_end_at = self.clock()
            self._output_base += event.output_tokens
            self._stream_chars = 0
            gauge.output_tokens = self._output_base

    async def _on_notice(self, event: ev.Notice) -> None:
        if event.kind == "retry" and not event.parent_tool_use_id:
            self._retrying = event.message
            self._refresh_activity_line()
            return
        if event.kind == "error":
            self._error_shown = True
        prefix = "↳ subagent: " if event.parent_tool_use_id else ""
        row = self._notice_rows.get(event.id) if event.id else None
        if row is not None and row.is_attached:
            row.update(prefix + event.message)
            return
        if not event.id:
            await self.transcript.add(partial(Notice, prefix + event.message, kind=event.kind))
            return
        row = self._notice_rows[event.id] = Notice(prefix + event.message, kind=event.kind)
        await self.transcript.add(row)

    async def _on_compaction_progress(self, event: ev.CompactionProgress) -> None:
        if event.parent_tool_use_id:
            return
        status = self.compacting
        if status is None:
            if event.trigger == "manual":
                # `/compact` owns its status line and has ended: this progress came after it (the
                # bus delivers after the call returns), and would leave "Compacting…" up for good.
                return
            status = CompactionStatus(event.trigger, self.clock())  # an automatic compaction, inside a turn
        status.output_tokens = event.output_tokens
        self.show_compacting(status)

    async def _on_compaction(self, event: ev.Compaction) -> None:
        if not event.parent_tool_use_id and self.compacting is not None and event.trigger != "manual":
            self.show_compacting(None)
        await self.transcript.add(
            partial(
                Notice,
                f"Conversation compacted ({event.trigger}): {event.tokens_before:,} → {event.tokens_after:,} tokens",
                kind="compaction",
            )
        )

    async def _on_interrupted(self, event: ev.Interrupted) -> None:
        if event.parent_tool_use_id:
            return
        await self._end_text_run()
        await self._show_interrupted()

    async def _on_query_finished(self, event: ev.QueryFinished) -> None:
        if event.parent_tool_use_id:
            return
        await self._end_text_run()
        if self._thinking is not None:
            self._thinking.finish()
            self._thinking = None
        self._close_turn()
        self.gauge.stop()
        if self.compacting is not None and self.compacting.trigger != "manual":
            self.show_compacting(None)
        if event.terminal_reason.startswith("aborted"):
            await self._show_interrupted()
        elif event.is_error and event.error and not self._error_shown:
            await self.transcript.add(partial(Notice, event.error, kind="error"))
        self.permission.drop_settled()
        self.show_queued()
        reports = self.session is not None and self.session.background_agents.pending
        if reports and not self.queued and not event.terminal_reason.startswith("abort"):
            self._app.deliver_notifications()  # a report that came after the turn's last tool results

    async def _on_settings_changed(self, event: ev.ModeChanged | ev.ModelChanged) -> None:
        # The header shows the mode and the model; whoever changed them (a key, a command, a program).
        self._refresh_header()

    async def _on_mcp_servers_changed(self, event: ev.McpServersChanged) -> None:
        names = ", ".join(event.servers) or "none"
        await self.transcript.add(partial(Notice, f"MCP servers: {names}; /mcp shows them.", kind="info"))

    async def _on_todo_updated(self, event: ev.TodoUpdated) -> None:
        if event.parent_tool_use_id:
            return
        marks = {"completed": "☑", "in_progress": "◐", "pending": "☐"}
        lines = ["Plan"] + [
            f"  {marks.get(str(t.get('status')), '☐')} {t.get('content', '')}" for t in event.todos
        ]
        await self.transcript.add(partial(Notice, "\n".join(lines), kind="todo"))

    async def _on_elicitation_requested(self, event: ev.ElicitationRequested) -> None:
        from .elicitation import answer_elicitation

        answer_elicitation(self._app, event)

    _HANDLERS: dict[type[ev.Event], Callable[..., Awaitable[None]]] = {
        ev.SessionStarted: _on_session_started,
        ev.UserMessage: _on_user_message,
        ev.RequestStarted: _on_request_started,
        ev.AttemptDiscarded: _on_attempt_discarded,
        ev.TextDelta: _on_text_delta,
        ev.ThinkingDelta: _on_thinking_delta,
        ev.BlockCompleted: _on_block_completed,
        ev.ToolQueued: _on_tool_queued,
        ev.ToolStarted: _on_tool_started,
        ev.ToolProgress: _on_tool_progress,
        ev.ToolFinished: _on_tool_finished,
        ev.PermissionRequested: _on_permission_requested,
        ev.PermissionResolved: _on_permission_resolved,
        ev.Usage: _on_usage,
        ev.Notice: _on_notice,
        ev.Compaction: _on_compaction,
        ev.CompactionProgress: _on_compaction_progress,
        ev.Interrupted: _on_interrupted,
        ev.QueryFinished: _on_query_finished,
        ev.TodoUpdated: _on_todo_updated,
        ev.ModeChanged: _on_settings_changed,
        ev.ModelChanged: _on_settings_changed,
        ev.McpServersChanged: _on_mcp_servers_changed,
        ev.BackgroundTask: _on_background_task,
        ev.ElicitationRequested: _on_elicitation_requested,
    }

    # ------------------------------------------------------------ streaming text

    async def _end_text_run(self) -> None:
        run, self._text_run = self._text_run, None
        if run is not None:
            run.finish()

    async def _show_interrupted(self) -> None:
        if not self._interrupt_shown:
            self._interrupt_shown = True
            await self.transcript.add(
                partial(Notice, "Interrupted · what should the agent do instead?", kind="interrupted")
            )

    def _close_turn(self) -> None:
        turn, self._turn = self._turn, None
        if turn is not None:
            now = self.clock()
            if turn.stream_end_at is None:
                turn.stream_end_at = now
            turn.closed_at = now
            self.timeline.turn_closed(turn)

    def refresh_tool(self, record: ToolRecord) -> None:
        if self.transcript.loading:
            return  # drawn from the records once loaded
        self.timeline.update_tool(record.tool_use_id)
        self.refresh_strip()
        call = self._tool_call(record)
        if call is not None:
            call.refresh_record()

    def _tool_call(self, record: ToolRecord) -> ToolCall | None:
        """The tool call's row in the transcript, if it is mounted now."""
        if record.parent_tool_use_id:
            return None
        try:
            call = self.transcript.get_child_by_id(dom_id("tool", record.key), ToolCall)
        except NoMatches:
            return None
        return call if call.record is record else None

    def activity(self) -> str:
        if not self.running:
            return "idle"
        if self.compacting is not None:
            return "compacting"
        if self.permission.current is not None:
            return "permission"
        turn = self._turn
        if turn is not None and turn.stream_end_at is None:
            return "streaming" if self._stream_chars else "waiting"
        if any(not r.finished for r in self.tool_records.values()):
            return "tools"
        return "waiting"

    def refresh_strip(self) -> None:
        if self.transcript.loading:
            return
        strip = self.timeline_strip
        if not self.timeline.display and not strip.display:
            self._app.apply_layout()  # the first turn: the pane or the strip, as the width gives
        strip.refresh()

    def tick(self) -> None:
        moving = self.timeline.tick() if self.timeline.display else False
        if self.timeline_strip.display and self.running:
            self.timeline_strip.refresh()
        if self.running or moving:
            gauge = self.gauge
            gauge.activity = self.activity()
            if self.running:
                gauge.output_tokens = self._output_base + self._stream_chars // 4
            gauge.refresh()
        if self.compacting is not None:
            self._refresh_activity_line()

    # ------------------------------------------------------------ shown outside the transcript

    def show_queued(self) -> None:
        widget = self._queued_view
        waiting = list(self.queued) if self.running else []
        widget.display = bool(waiting)
        lines = [f"⏳ queued: {p.text.strip().splitlines()[0][:200]}" for p in waiting]
        widget.update("\n".join(lines))

    def show_compacting(self, status: CompactionStatus | None) -> None:
        self.compacting = status
        self._refresh_activity_line()
        self.gauge.activity = self.activity()

    def _refresh_activity_line(self) -> None:
        line, status = self._activity_line, self.compacting
        line.display = status is not None or self._retrying is not None
        if status is None and self._retrying is not None:
            line.update(Content.assemble(("↻ ", "$text-warning"), (self._retrying, "$text-warning"),
                                         (" · esc to interrupt", "$text-muted")))
        elif status is not None:
            now = self.clock()
            frame = SPINNER[int(now * 10) % len(SPINNER)]
            line.update(
                Content.assemble(
                    (f"{frame} ", "$text-accent"),
                    (status.describe(now), "$text-accent"),
                    (" · esc to interrupt", "$text-muted"),
                )
            )

    async def clear(self) -> None:
        """Empty the transcript, timeline and gauge (the engine's history is not touched)."""
        self.tool_records.clear()
        await self.transcript.clear_entries()
        self.timeline.clear()
        gauge = self.gauge
        gauge.context_tokens = 0
        gauge.output_tokens = 0
        gauge.started_at = None
