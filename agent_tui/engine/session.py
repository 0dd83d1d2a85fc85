"""Session: the conversation across prompts (the seeds' QueryEngine layer).

It owns the history, the system prompt and the permission policy, runs one
`query()` per prompt, and publishes everything on its bus.  Front ends (TUI,
print mode) call `submit()` and `abort()` and read the bus; they never touch
the loop directly.
"""

from __future__ import annotations

import asyncio
import platform
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from ..tools.base import Tool, ToolContext
from . import events as ev
from .bus import EventBus
from .executor import ExecutorOptions, PermissionDenial
from .messages import Message, check_history, ensure_tool_result_pairing, user_message
from .model import DEFAULT_MAX_TOKENS, ModelClient, context_window_for
from .permissions import PermissionPolicy
from .query import QueryParams, RetryPolicy, Terminal, TerminalReason, query


@dataclass
class SessionOptions:
    max_turns: int | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_concurrency: int = 10
    context_window: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    append_system_prompt: str = ""
    session_dir: Path | None = None
    settings: Any = None


def is_git_repo(cwd: Path) -> bool:
    for parent in (cwd, *cwd.parents):
        if (parent / ".git").exists():
            return True
    return False


def build_system_prompt(cwd: Path, tools: list[Tool], model_label: str, extra: str = "") -> str:
    tool_lines = "\n".join(f"- {t.name}" for t in tools)
    git = "Yes" if is_git_repo(cwd) else "No"
    prompt = f"""You are agent-tui, an interactive coding agent running in the user's terminal. \
You help with software engineering tasks in the user's repository: reading and searching code, \
editing files, and running commands, using the tools below.

Be concise and direct; the user reads your answer in a terminal (Markdown is rendered). \
Use the tools to find out instead of guessing. When several independent read-only lookups \
are needed, request them in one response so they run in parallel. Changes and commands wait \
for the user's approval; if the user rejects a tool call, stop and ask how to proceed.

Available tools:
{tool_lines}

<env>
Working directory: {cwd}
Is directory a git repo: {git}
Platform: {platform.system().lower()}
OS Version: {platform.platform(terse=True)}
Today's date: {date.today().isoformat()}
Model: {model_label}
</env>"""
    if extra:
        prompt += "\n\n" + extra
    return prompt


class Session:
    def __init__(
        self,
        *,
        model: ModelClient,
        tools: list[Tool],
        cwd: Path,
        policy: PermissionPolicy | None = None,
        bus: EventBus | None = None,
        options: SessionOptions | None = None,
        session_id: str | None = None,
        history: list[Message] | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.cwd = Path(cwd).resolve()
        self.policy = policy or PermissionPolicy()
        self.bus = bus or EventBus()
        self.options = options or SessionOptions()
        self.session_id = session_id or str(uuid.uuid4())
        self.history: list[Message] = ensure_tool_result_pairing(history) if history else []
        self.system_prompt = build_system_prompt(
            self.cwd, tools, getattr(model, "label", model.name), self.options.append_system_prompt
        )
        self.tool_state: dict[str, Any] = {}
        self.permission_denials: list[PermissionDenial] = []
        self.usage_totals: dict[str, int] = {}
        self.turns = 0
        self.last_terminal: Terminal | None = None
        self._abort = asyncio.Event()
        self._lock = asyncio.Lock()
        self._running = False
        self._started = False

    @property
    def running(self) -> bool:
        return self._running

    @property
    def context_window(self) -> int:
        return self.options.context_window or context_window_for(self.model.name)

    def start(self) -> None:
        """Publish `session_started` (once)."""
        if self._started:
            return
        self._started = True
        self.bus.publish(
            ev.SessionStarted(
                session_id=self.session_id,
                model=getattr(self.model, "label", self.model.name),
                cwd=str(self.cwd),
                permission_mode=self.policy.mode,
                tools=[t.name for t in self.tools],
                offline=bool(getattr(self.model, "offline", False)),
            )
        )

    def abort(self) -> None:
        """Stop the running turn (stream and tools).  Harmless when idle."""
        if self._running:
            self._abort.set()

    def clear(self) -> None:
        self.history = []
        self.tool_state.clear()

    async def aclose(self) -> None:
        """Release the model client's connections."""
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()

    def make_context(self, tool_use_id: str) -> ToolContext:
        return ToolContext(
            cwd=self.cwd,
            abort=self._abort,
            session_dir=self.options.session_dir,
            settings=self.options.settings,
            state=self.tool_state,
            tool_use_id=tool_use_id,
        )

    async def submit(self, prompt: str | list[dict[str, Any]]) -> Terminal:
        """Run one prompt to its end.  Prompts submitted while one runs wait their turn."""
        self.start()
        queued = self._lock.locked()
        async with self._lock:
            return await self._run(prompt, queued)

    async def _run(self, prompt: str | list[dict[str, Any]], queued: bool) -> Terminal:
        self._abort = asyncio.Event()
        self._running = True
        started = time.monotonic()
        text = prompt if isinstance(prompt, str) else _prompt_text(prompt)
        self.bus.publish(ev.UserMessage(text=text, queued=queued))
        messages = list(self.history) + [user_message(prompt)]
        usage: dict[str, int] = {}
        try:
            terminal = await query(
                QueryParams(
                    messages=messages,
                    model=self.model,
                    tools=self.tools,
                    policy=self.policy,
                    emit=self.bus.publish,
                    abort=self._abort,
                    make_context=self.make_context,
                    system=self.system_prompt,
                    model_name=self.model.name,
                    max_tokens=self.options.max_tokens,
                    max_turns=self.options.max_turns,
                    max_concurrency=self.options.max_concurrency,
                    context_window=self.context_window,
                    retry=self.options.retry,
                    executor_options=ExecutorOptions(
                        max_concurrency=self.options.max_concurrency, denials=self.permission_denials
                    ),
                    usage_totals=usage,
                )
            )
        except Exception as exc:
            # A bug in the loop must not lose the conversation: keep what was valid.
            terminal = Terminal(
                reason=TerminalReason.MODEL_ERROR,
                messages=ensure_tool_result_pairing(messages),
                turns=1,
                error=f"Internal error: {type(exc).__name__}: {exc}",
            )
            self.bus.publish(ev.Notice(kind="error", message=terminal.error or ""))
        finally:
            self._running = False
        history = terminal.messages
        if check_history(history):
            history = ensure_tool_result_pairing(history)
        self.history = history
        self.turns += terminal.turns
        for key, value in usage.items():
            self.usage_totals[key] = self.usage_totals.get(key, 0) + value
        self.last_terminal = terminal
        self.bus.publish(
            ev.QueryFinished(
                terminal_reason=terminal.reason.value,
                turns=terminal.turns,
                usage=dict(usage),
                result=terminal.result,
                is_error=terminal.is_error,
                error=terminal.error,
                duration_ms=int((time.monotonic() - started) * 1000),
            )
        )
        return terminal


def _prompt_text(content: list[dict[str, Any]]) -> str:
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def git_branch(cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=2
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
