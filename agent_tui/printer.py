"""Print mode (`-p`): one prompt, no UI, Claude Code compatible output.

`text` prints the final answer; `json` prints one result object (with
`verbose`, Claude Code's array of every message ending with it);
`stream-json` prints Claude Code's messages one per line (claude_stream.py),
then the result object; `stream-events` prints every bus event of the engine
as a JSON line, then the result object.  Print mode never prompts: an
undecided permission is denied and listed in `permission_denials`.  SIGINT
aborts the turn cleanly and exits 130.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any, TextIO

from .claude_stream import ApiClock, ClaudeCodeStream
from .engine import Session, Terminal, TerminalReason, valid_utf8
from .engine import events as ev

_SUBTYPES = {
    TerminalReason.COMPLETED: "success",
    TerminalReason.MAX_TURNS: "error_max_turns",
    TerminalReason.MAX_BUDGET_USD: "error_max_budget_usd",
    TerminalReason.MAX_STRUCTURED_OUTPUT_RETRIES: "error_max_structured_output_retries",
    TerminalReason.STOP_HOOK_PREVENTED: "success",
    TerminalReason.HOOK_STOPPED: "success",
}


class _ValidUtf8:
    """Writes only valid UTF-8: undecodable bytes from files or commands print as U+FFFD."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(valid_utf8(text))

    def flush(self) -> None:
        self._out.flush()


def result_object(session: Session, terminal: Terminal, duration_ms: int, duration_api_ms: int = 0) -> dict[str, Any]:
    result = {
        "type": "result",
        "subtype": _SUBTYPES.get(terminal.reason, "error_during_execution"),
        "is_error": terminal.is_error,
        "result": terminal.result or (terminal.error or "" if terminal.is_error else ""),
        "num_turns": terminal.turns,
        "duration_ms": duration_ms,
        # Time spent in model requests (the SDKs' parsers require the field).
        "duration_api_ms": duration_api_ms,
        "stop_reason": None,
        "uuid": str(uuid.uuid4()),
        "usage": {
            "input_tokens": terminal.usage.get("input_tokens", 0),
            "output_tokens": terminal.usage.get("output_tokens", 0),
            "cache_read_input_tokens": terminal.usage.get("cache_read_input_tokens", 0),
            "cache_creation_input_tokens": terminal.usage.get("cache_creation_input_tokens", 0),
        },
        # At list prices, as Claude Code reports it; null when a model used has no known price.
        "total_cost_usd": session.cost_usd,
        "session_id": session.session_id,
        "model": session.model.label,
        "terminal_reason": terminal.reason.value,
        "error": terminal.error,
        "permission_denials": [d.to_dict() for d in session.permission_denials],
        "modelUsage": {
            model: {
                "inputTokens": usage.get("input_tokens", 0),
                "outputTokens": usage.get("output_tokens", 0),
                "cacheReadInputTokens": usage.get("cache_read_input_tokens", 0),
                "cacheCreationInputTokens": usage.get("cache_creation_input_tokens", 0),
            }
            for model, usage in session.usage_by_model.items()
        },
    }
    if session.structured_output is not None:
        # --json-schema: the answer as JSON that matches the schema (the SDKs read this field).
        result["structured_output"] = session.structured_output
    return result


OUTPUT_FORMATS = ("text", "json", "stream-json", "stream-events")


async def run_print(
    session: Session,
    prompt: str | list[dict[str, Any]],
    output_format: str = "text",
    out: TextIO | None = None,
    *,
    verbose: bool = False,
    include_partial: bool = False,
    allowed_tools: Sequence[str] = (),
) -> int:
    out = _ValidUtf8(out or sys.stdout)
    started = time.monotonic()
    # Claude Code's messages of a `json --verbose` run, printed as one array at the end.
    messages: list[dict[str, Any]] = []
    retry_line = _listen(session, output_format, out, messages, verbose=verbose, include_partial=include_partial)
    api_clock = ApiClock()
    session.add_listener(api_clock)
    terminal, interrupted = await _submit(session, prompt, allowed_tools)
    if retry_line is not None:
        retry_line.close()
    result = result_object(session, terminal, int((time.monotonic() - started) * 1000), api_clock.ms)
    if output_format == "json" and verbose:
        out.write(json.dumps([*messages, result], ensure_ascii=False) + "\n")
    elif output_format != "text":
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        _print_text(session, terminal, out)
    out.flush()
    if interrupted or terminal.reason in _ABORTED:
        return 130
    return 1 if terminal.is_error else 0


_ABORTED = (TerminalReason.ABORTED_STREAMING, TerminalReason.ABORTED_TOOLS)


def _listen(session: Session, output_format: str, out: TextIO, messages: list[dict[str, Any]], *,
            verbose: bool, include_partial: bool) -> RetryLine | None:
    """Subscribe what prints as the run goes: the chosen stream format, or retry notices."""
    encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    if output_format == "stream-json":

        def print_message(message: dict[str, Any]) -> None:
            out.write(encode(message) + "\n")

        session.add_listener(ClaudeCodeStream(session, print_message, include_partial=include_partial))
    elif output_format == "json" and verbose:
        session.add_listener(ClaudeCodeStream(session, messages.append))
    if output_format == "stream-events":
        write = out.write

        def print_event(event: ev.Event) -> None:
            if type(event) is ev.TextDelta and event.parent_tool_use_id is None:
                # The hot path: one line per streamed delta.
                write(f'{{"type": "text_delta", "index": {event.index}, "text": {encode(event.text)}}}\n')
            else:
                write(encode(event.to_dict()) + "\n")

        session.add_listener(print_event)
        return None
    retry_line = RetryLine(sys.stderr)
    session.add_listener(retry_line)
    return retry_line


async def _submit(
    session: Session, prompt: str | list[dict[str, Any]], allowed_tools: Sequence[str]
) -> tuple[Terminal, bool]:
    """Run the prompt with Ctrl+C ending the turn (not the process); the terminal, and
    whether Ctrl+C was pressed."""
    loop = asyncio.get_running_loop()
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        session.abort()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        terminal = await session.submit(prompt, allowed_tools=allowed_tools)
        # Background agents still running: wait for them, and let the model read their reports.
        while not interrupted and (after := await session.finish_background()) is not None:
            terminal = after
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
    return terminal, interrupted


def _print_text(session: Session, terminal: Terminal, out: TextIO) -> None:
    """`--output-format text`: the answer on stdout; what went wrong on stderr."""
    if terminal.result:
        out.write(terminal.result.rstrip("\n") + "\n")
    if terminal.error and terminal.reason not in _ABORTED:
        print(f"agent-tui: {terminal.error}", file=sys.stderr)
    if terminal.reason in _ABORTED:
        print("agent-tui: interrupted", file=sys.stderr)
    if session.permission_denials:
        names = ", ".join(sorted({d.tool_name for d in session.permission_denials}))
        print(f"agent-tui: permission denied for {names} (allow with --allowedTools or --permission-mode)",
              file=sys.stderr)


class RetryLine:
    """Retries and a model fallback go to stderr (stdout carries only the answer or JSON).
    On a terminal, one retry after another rewrites one line, as the TUI does; piped,
    each is a line of its own."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.rewrite = stream.isatty()
        self.open = False

    def __call__(self, event: ev.Event) -> None:
        if type(event) is not ev.Notice or event.kind not in ("retry", "fallback"):
            return
        if self.rewrite and event.kind == "retry":
            self.stream.write(f"\r\x1b[2Kagent-tui: {event.message}")
            self.stream.flush()
            self.open = True
        else:
            self.close()
            print(f"agent-tui: {event.message}", file=self.stream)

    def close(self) -> None:
        """End the line being rewritten, before anything else is printed."""
        if self.open:
            self.stream.write("\n")
            self.open = False
