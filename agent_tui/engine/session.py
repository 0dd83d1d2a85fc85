"""Session: the conversation across prompts (the seeds' QueryEngine layer).

It owns the history, the system prompt and the permission policy, runs one
`query()` per prompt, and publishes everything on its bus.  Front ends (TUI,
print mode) call `submit()` and `abort()` and read the bus; they never touch
the loop directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..tools.agent import AgentDefinition
from ..tools.base import EditorFiles, Tool, ToolContext, ToolResult, tool_to_api, with_tools
from ..tools.bash import move_to_background
from ..tools.file_state import ReadStateWatcher
from ..tools.skill import NAME as SKILL_TOOL
from ..tools.skill import SkillDefinition, skills_block
from ..tools.structured_output import NAME as STRUCTURED_OUTPUT
from ..tools.structured_output import REMINDER as STRUCTURED_REMINDER
from ..tools.structured_output import STATE_KEY as STRUCTURED_STATE
from ..tools.structured_output import StructuredOutputTool
from . import events as ev
from .background_agents import BackgroundAgents
from .bus import EventBus
from .checkpoints import Checkpoints
from .claude_files import CustomCommand, load_agents, load_commands
from .context.compaction import Compacted, CompactionFailed, CompactionInterrupted, compact_conversation
from .context.window import (
    CompactionSettings,
    ContextBreakdown,
    ContextTracking,
    PipelineEnv,
    context_breakdown,
    count_tokens,
)
from .front_door import FrontDoor
from .hook_transcript import HookTranscript
from .hooks import DEFAULT_TIMEOUT as DEFAULT_HOOK_TIMEOUT
from .hooks import HookCallback, HookCommand, HookRunner, context_text, hook_label
from .loop.attempts import RetryPolicy
from .loop.executor import ExecutorOptions, PermissionDenial
from .loop.query import QueryParams, Terminal, TerminalReason, query, warm_request
from .loop.subagent import run_subagent
from .memo import HistoryMemo
from .memory import Memory, append_memory, load_memory, project_memory_file
from .messages import (
    Message,
    blocks,
    check_history_since,
    ensure_tool_result_pairing,
    is_attachment,
    normalize_for_api,
    text_block,
    user_message,
)
from .models.base import ModelClient, context_window_for
from .models.stream import DEFAULT_MAX_TOKENS, ModelRequest
from .permissions.policy import CYCLE, MODES, PermissionPolicy
from .pricing import add_usage, total_cost_usd
from .shell_mode import ShellOutcome, run_shell_command
from .skills import load_skills
from .store import Transcript, TranscriptStore, find_session, load_transcript, project_dir
from .system_prompt import build_system_prompt

if TYPE_CHECKING:
    from .mcp import McpManager, McpServerStatus, SdkRelay
    from .mcp_features import ElicitationAnswer, ElicitationRequest, McpPrompt

# The `<env>` line that names the model (`set_model` rewrites it).
_MODEL_LINE = re.compile(r"\nModel: [^\n]*\n</env>")


@dataclass
class SessionOptions:
    max_turns: int | None = None
    # The output limit the user set (`maxOutputTokens`); None: DEFAULT_MAX_TOKENS, escalated when an answer is cut off.
    max_tokens: int | None = None
    max_concurrency: int = 10
    context_window: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    append_system_prompt: str = ""
    # In place of agent-tui's own system prompt (`--system-prompt`; "" : none); None: agent-tui's.
    system_prompt: str | None = None
    session_dir: Path | None = None
    # The settings' `hooks` table (Claude Code's shape) and `env` (what hook commands also get).
    hooks: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    # What the settings layers could not use, shown as notices when the session starts.
    settings_problems: Sequence[str] = ()
    # `mcpServers` (Claude Code's shape); None: none.
    mcp_servers: Mapping[str, Any] | None = None
    # Write the transcript (engine/store.py) so the session can be resumed.
    persist: bool = False
    # Put the memory files (AGENTS.md, CLAUDE.md) in the system prompt.
    load_memory: bool = True
    # Read custom commands and subagent types from `.claude/` and `.agent-tui/` (claude_files.py).
    load_project_files: bool = True
    # Keep the read-state cache fresh with a file watcher on the working directory
    # (the front ends turn it on; they close the session, which stops it).
    watch_files: bool = False
    # Switch to it after repeated overloaded errors; None: no fallback.
    fallback_model: str | None = None
    # --max-budget-tokens: output tokens one prompt may spend.
    max_budget_tokens: int | None = None
    # --max-budget-usd: what the session may cost; a prompt stops before the request that would go past it.
    max_budget_usd: float | None = None
    # --json-schema: each prompt's answer is also JSON matching it, through the StructuredOutput tool.
    json_schema: Mapping[str, Any] | None = None
    # None: the defaults (CompactionSettings()).
    compaction: CompactionSettings | None = None
    # cache_control breakpoints in requests (some local servers reject them).
    prompt_caching: bool = True
    # "off" | "adaptive" | a budget; None: adaptive for Claude models.
    thinking: str | int | None = None
    effort: str | None = None
    # Measures tool durations (`tool_finished`); tests inject the clock their front end reads.
    clock: Callable[[], float] = time.monotonic
    # Take a checkpoint as each prompt starts (persisted sessions only; engine/checkpoints.py).
    checkpoints: bool = True


@dataclass(frozen=True, slots=True)
class Result:
    """How a prompt ended, as a script reads it (what `agent_tui.ask()` yields last)."""

    result: str
    is_error: bool
    # The loop's terminal reason ("completed", "max_turns", "aborted_streaming", ...).
    terminal_reason: str
    num_turns: int
    usage: dict[str, int]
    session_id: str
    error: str | None = None
    total_cost_usd: float | None = None
    permission_denials: tuple[dict[str, Any], ...] = ()
    # With a JSON schema: the answer as JSON that matches it.
    structured_output: Any = None

    @classmethod
    def of(cls, session: Session, terminal: Terminal) -> Result:
        return cls(
            result=terminal.result,
            is_error=terminal.is_error,
            terminal_reason=terminal.reason.value,
            num_turns=terminal.turns,
            usage=dict(terminal.usage),
            session_id=session.session_id,
            error=terminal.error,
            total_cost_usd=session.cost_usd,
            permission_denials=tuple(d.to_dict() for d in session.permission_denials),
            structured_output=session.structured_output,
        )


class Session(FrontDoor):
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
        if self.options.json_schema is not None:
            self.tools = [*self.tools, StructuredOutputTool(self.options.json_schema)]
        self.history: list[Message] = ensure_tool_result_pairing(history) if history else []
        self._load_project()
        # Commands started with run_in_background, shared with subagents; killed by `aclose`.
        self._background_shells: dict[str, Any] = {}
        # Agents started with run_in_background (engine/background_agents.py); stopped by `aclose`.
        self.background_agents = BackgroundAgents(self)
        # Set by `resume` when the session was open elsewhere and this one continues a copy.
        self.forked_from: str | None = None
        self.tool_state: dict[str, Any] = {"background_shells": self._background_shells}
        # Each history message's API form and JSON, made once across the session's requests.
        self._memo = HistoryMemo()
        # `prepare_history` filling the memo in a worker thread; the next prompt waits for it.
        self._warming: asyncio.Future[None] | None = None
        self._watcher: ReadStateWatcher | None = None
        self._init_totals()
        # Last usage and autocompact failures, valid for `_tracked_history` only.
        self.context_tracking = ContextTracking()
        self._tracked_history: list[Message] | None = None
        self._abort = asyncio.Event()
        self._lock = asyncio.Lock()
        self._running = False
        self._started = False
        self.hooks = HookRunner(
            self.options.hooks,
            cwd=self.cwd,
            session_id=self.session_id,
            emit=self.bus.publish,
            permission_mode=lambda: self.policy.mode,
            transcript_path=self._hook_transcript_path,
            env=self.options.env,
        )
        # The conversation in Claude Code's transcript shape, for hook scripts (None: no hooks yet).
        self._hook_transcript: HookTranscript | None = None
        self._hook_scratch: str | None = None
        if self.options.json_schema is not None:
            self.add_hook_callback("Stop", None, STRUCTURED_OUTPUT, self._ask_for_structured_output)
        # SessionStart hooks still to run and why ("startup" | "resume" | "clear"); their context rides
        # with the next prompt.
        self._session_start_source: str | None = "resume" if history else "startup"
        self._session_start: asyncio.Task[None] | None = None
        self._hook_context: list[str] = []
        # What `!command`s printed since the last prompt: it goes to the model with the next one.
        self._shell_context: list[str] = []
        # Tools that need the session itself (the Agent tool runs subagents with its model and bus).
        for tool in tools:
            tool.attach_session(self)
        self._init_mcp()
        # The editor's buffers in place of the disk for the file tools (`use_files`); None: the disk.
        self._files: EditorFiles | None = None
        # The transcript being written (None: not persisted), and the one `resume()` loaded.
        self.store: TranscriptStore | None = None
        self.transcript: Transcript | None = None
        self._detach_store = lambda: None
        if self.options.persist:
            self._use_store(TranscriptStore(self.cwd, self.session_id))
        # A checkpoint as every prompt starts, for /rewind (`engine/checkpoints.py`); persisted sessions only.
        self.checkpoints: Checkpoints | None = (
            Checkpoints.attach(self) if self.options.persist and self.options.checkpoints else None)

    def _init_totals(self) -> None:
        """What the session's prompts add up to: usage, cost, turns, denials, the last ending."""
        self.permission_denials: list[PermissionDenial] = []
        self.usage_totals: dict[str, int] = {}
        # The same usage per model name: what the session cost (`cost_usd`).
        self.usage_by_model: dict[str, dict[str, int]] = {}
        self.turns = 0
        self.last_terminal: Terminal | None = None

    def _init_mcp(self) -> None:
        """The session's MCP state, before any server is started."""
        # Connected MCP servers (`/mcp` reads `mcp.servers()`); None until start_mcp ran with servers.
        self.mcp: McpManager | None = None
        self._mcp_start: asyncio.Future[list[McpServerStatus]] | None = None
        self._mcp_tools: list[Tool] = []
        self._mcp_instructions = ""
        # Relays JSON-RPC to `"type": "sdk"` servers, which live in the program driving the session
        # (the Agent SDK transport sets it); None: such a server fails to connect.
        self.sdk_mcp_relay: SdkRelay | None = None
        # A front end shows servers' elicitation forms (`accept_elicitation_forms`); else they are declined.
        self._elicitation_forms = False
        self._mcp_notifications: set[asyncio.Task[None]] = set()

    def _load_project(self) -> None:
        """The memory files and the system prompt they are part of; Claude Code project files."""
        # The memory files in the system prompt (`/memory` lists `memory.files`).
        self.memory = load_memory(self.cwd) if self.options.load_memory else Memory()
        if self.options.system_prompt is None:
            self.system_prompt = build_system_prompt(
                self.cwd,
                self.tools,
                self.model.label,
                self.options.append_system_prompt,
                memory=self.memory.block(),
            )
        else:
            # The caller's own prompt in place of agent-tui's ("" : none); memory and appended text follow.
            parts = (self.options.system_prompt, self.memory.block(), self.options.append_system_prompt)
            self.system_prompt = "\n\n".join(part for part in parts if part)
        # `/name` commands and subagent types for the Agent tool.
        self.project_problems: list[str] = []
        load = self.options.load_project_files
        self.custom_commands: dict[str, CustomCommand] = load_commands(self.cwd, self.project_problems) if load else {}
        self.agent_types: dict[str, AgentDefinition] = load_agents(self.cwd, self.project_problems) if load else {}
        # Skills (`engine/skills.py`): listed in the system prompt when the Skill tool can load them.
        self.skills: dict[str, SkillDefinition] = load_skills(self.cwd, self.project_problems) if load else {}
        if self.skills and any(t.name == SKILL_TOOL for t in self.tools):
            self.system_prompt += "\n\n" + skills_block(self.skills)

    @property
    def running(self) -> bool:
        return self._running

    @property
    def todos(self) -> list[dict[str, Any]]:
        """The agent's current plan, as its last TodoWrite left it."""
        return list(self.tool_state.get("todos", []))

    @property
    def context_window(self) -> int:
        return (
            self.options.context_window
            or context_window_for(self.model.name)
        )

    def start(self) -> None:
        """Publish `session_started` (once)."""
        if self._started:
            return
        self._started = True
        if self._mcp_start is None and self._configured_mcp_servers():
            with contextlib.suppress(RuntimeError):  # no running loop yet: submit() connects them
                self._mcp_start = asyncio.get_running_loop().create_task(self._connect_mcp(None, None, None))
        self.bus.publish(
            ev.SessionStarted(
                session_id=self.session_id,
                model=self.model.label,
                cwd=str(self.cwd),
                permission_mode=self.policy.mode,
                tools=[t.name for t in self.tools],
                offline=self.model.offline,
            )
        )
        for problem in self.hooks.problems:
            self.bus.publish(ev.Notice(kind="hook", message=problem))
        for problem in self.options.settings_problems:
            self.bus.publish(ev.Notice(kind="error", message=f"Settings: {problem}"))
        for problem in self.project_problems:
            self.bus.publish(ev.Notice(kind="error", message=problem))
        for tool in self.tools:
            if text := tool.unsandboxed_warning():
                self.bus.publish(ev.Notice(kind="sandbox", message=text))
        with contextlib.suppress(RuntimeError):  # no running loop yet: submit() runs them
            self._begin_session_start()

    def interrupt(self) -> None:
        """Stop the running turn (stream and tools); the loop publishes `interrupted` and the turn's
        `query_finished`.  Harmless when idle."""
        if self._running:
            self._abort.set()

    # The name the loop's callers used first (signal handlers, the TUI's Esc).
    abort = interrupt

    def background_bash(self) -> int:
        """Send the running Bash commands to the background (the TUI's Ctrl+B): they keep running,
        their output going to a background log, and their calls return saying so; how many."""
        return move_to_background(self.tool_state)

    def set_permission_mode(self, mode: str) -> None:
        """Put `mode` in force (for the running turn's next decision too) and publish `mode_changed`."""
        if mode not in MODES:
            raise ValueError(f"unknown permission mode {mode!r}; one of: {', '.join(MODES)}")
        previous, self.policy.mode = self.policy.mode, mode
        self.bus.publish(ev.ModeChanged(mode=mode, previous=previous))

    def cycle_permission_mode(self) -> str:
        """Shift+Tab: default -> acceptEdits -> plan -> default."""
        current = self.policy.mode
        mode = CYCLE[(CYCLE.index(current) + 1) % len(CYCLE)] if current in CYCLE else CYCLE[0]
        self.set_permission_mode(mode)
        return mode

    def set_model(self, name: str) -> None:
        """Use the model `name` from the next request on; the system prompt names it; publishes
        `model_changed`.  The offline demo model has no other model (ValueError)."""
        name = name.strip()
        if not name:
            raise ValueError("a model name is needed")
        if self.model.offline:
            raise ValueError("the offline demo model cannot switch models")
        previous = self.model.label
        self.model.name = name
        self.model.label = name
        self.system_prompt = _MODEL_LINE.sub(lambda _: f"\nModel: {name}\n</env>", self.system_prompt, count=1)
        self.bus.publish(ev.ModelChanged(model=name, previous=previous))

    def add_hook_callback(self, event: str, matcher: str | None, name: str, callback: HookCallback,
                          timeout: float | None = None) -> None:
        """A hook the driving program answers (the Agent SDK's hooks), run like a configured command.
        ValueError for an event agent-tui has no hooks for."""
        hook = HookCommand(name, timeout=timeout or DEFAULT_HOOK_TIMEOUT, callback=callback)
        self.hooks.add_callback(event, matcher, hook)

    def use_files(self, files: EditorFiles | None) -> None:
        """Read, Write, Edit and MultiEdit read and change files through `files` (the editor's
        buffers, an ACP client's `fs/*` methods) from the next call on; None: the disk."""
        self._files = files

    def define_agent(self, agent: AgentDefinition) -> None:
        """A subagent type for the Agent tool, beside the project's (a program's `agents`)."""
        self.agent_types[agent.name] = agent

    def set_mcp_servers(self, servers: Mapping[str, Any]) -> None:
        """Replace the configured MCP servers (`mcpServers`' shape) and publish `mcp_servers_changed`.

        Before the servers connected, the new set is what connects; after, the old servers are
        closed, their tools removed and the new set connects (the next prompt waits for it)."""
        servers = dict(servers)
        self.options.mcp_servers = servers
        previous = self._mcp_start
        if previous is not None:
            self._mcp_start = asyncio.ensure_future(self._reconnect_mcp(previous))
        self.bus.publish(ev.McpServersChanged(servers=sorted(servers)))

    async def _reconnect_mcp(self, previous: asyncio.Future[list[McpServerStatus]]) -> list[McpServerStatus]:
        if not previous.done():
            previous.cancel()
        await asyncio.gather(previous, return_exceptions=True)
        manager, self.mcp = self.mcp, None
        if manager is not None:
            mcp_tools = {id(tool) for tool in self._mcp_tools}
            self.tools = [tool for tool in self.tools if id(tool) not in mcp_tools]
            if self._mcp_instructions:
                self.system_prompt = self.system_prompt.replace("\n\n" + self._mcp_instructions, "", 1)
            await manager.aclose()
        return await self._connect_mcp(None, None, None)

    def add_directory(self, directory: Path | str) -> Path:
        """Make `directory` a working directory too (reads allowed; an MCP root); connected MCP
        servers are told their roots changed."""
        resolved = self.policy.add_directory(directory)
        if self.mcp is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: servers ask for the roots anyway
                task = asyncio.get_running_loop().create_task(self.mcp.roots_changed())
                self._mcp_notifications.add(task)
                task.add_done_callback(self._mcp_notifications.discard)
        return resolved

    def accept_elicitation_forms(self) -> None:
        """The attached front end shows MCP servers' elicitation forms: `elicitation_requested` is
        published for it to answer.  Without it (print mode, the SDK transport) they are declined."""
        self._elicitation_forms = True

    def mcp_prompts(self) -> list[McpPrompt]:
        """The connected servers' prompts, each a slash command `/mcp__server__prompt`."""
        return self.mcp.prompts() if self.mcp is not None else []

    def mcp_resources(self) -> list[Any]:
        """The connected servers' resources as they listed them on connecting (`McpResource`s:
        server, uri, name), for `@server:uri` completion."""
        return self.mcp.resources() if self.mcp is not None else []

    async def expand_mcp_prompt(self, text: str) -> list[dict[str, Any]] | None:
        """The user message `/mcp__server__prompt args` stands for (the server's prompts/get), or
        None when `text` names no MCP prompt.  McpPromptError when it cannot be expanded."""
        from .mcp_features import McpPromptError, find_prompt, prompt_blocks

        if not text.lstrip().startswith("/mcp__"):
            return None
        await self.start_mcp()
        found = find_prompt(self.mcp_prompts(), text)
        if found is None or self.mcp is None:
            return None
        prompt, words = found
        from ..tools.mcp import McpCallError

        try:
            result = await self.mcp.get_prompt(prompt, prompt.bind(words))
        except McpCallError as exc:
            raise McpPromptError(f"/{prompt.command}: {exc}") from None
        content = await asyncio.to_thread(prompt_blocks, result, f"/{prompt.command}")
        if not content:
            raise McpPromptError(f"/{prompt.command}: the server's prompt has no content")
        return content

    async def _resource_mentions(self, text: str) -> list[dict[str, Any]]:
        """`@server:uri` mentions of MCP resources, read and attached as ReadMcpResourceTool results."""
        if self.mcp is None or "@" not in text:
            return []
        from ..tools.mcp_resources import read_resource_content
        from .mcp_features import mentioned_resources, resource_attachment

        attached: list[dict[str, Any]] = []
        for server, uri in mentioned_resources(text, self.mcp.resource_servers()):
            try:
                content, _ = await read_resource_content(self.mcp, server, uri, self.make_context("attachment"))
            except Exception as exc:  # the prompt goes on without it, saying why
                content = f"The resource could not be read: {type(exc).__name__}: {exc}"
            attached += resource_attachment(server, uri, content)
        return attached

    async def _answer_elicitation(self, request: ElicitationRequest) -> ElicitationAnswer:
        """A server's elicitation: the front end's form when one shows them, else declined.  An
        interrupted turn cancels a form still open."""
        from .mcp_features import ElicitationAnswer

        answer = await self._elicitation_hooks(request)
        if answer is not None:
            self.bus.publish(ev.ElicitationResolved(server=request.server, action=answer.action))
            return answer
        if not self._elicitation_forms:
            message = f"MCP server {request.server} asked for input ({request.message[:120]}); declined: " \
                      "no one can answer here"
            self.bus.publish(ev.Notice(kind="warning", message=message))
            return ElicitationAnswer("decline")
        future: asyncio.Future[ElicitationAnswer] = asyncio.get_running_loop().create_future()
        self.bus.publish(ev.ElicitationRequested(server=request.server, message=request.message,
                                                 schema=request.schema, url=request.url, future=future))
        # Only a running turn's abort counts (a server may ask between turns too).
        aborted = asyncio.ensure_future(self._abort.wait() if self._running else asyncio.Event().wait())
        try:
            await asyncio.wait({future, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        answer = future.result() if future.done() and not future.cancelled() else ElicitationAnswer("cancel")
        future.cancel()  # a form still open closes
        self.bus.publish(ev.ElicitationResolved(server=request.server, action=answer.action))
        return answer

    async def _elicitation_hooks(self, request: ElicitationRequest) -> ElicitationAnswer | None:
        """Elicitation hooks (a program's, or configured commands) answering for the person: their
        `hookSpecificOutput.action` (and `content`); exit 2 declines.  None: no hook answered."""
        from .mcp_features import ElicitationAnswer

        fields: dict[str, Any] = {"mcp_server_name": request.server, "message": request.message,
                                  "mode": "url" if request.url is not None else "form"}
        fields.update({"url": request.url} if request.url is not None else {"requested_schema": request.schema})
        if not self.hooks.has("Elicitation", fields):
            return None
        outcome = await self.hooks.run("Elicitation", fields)
        if outcome.elicitation_action is not None:
            return ElicitationAnswer(outcome.elicitation_action, outcome.elicitation_content)  # type: ignore[arg-type]
        return ElicitationAnswer("decline") if outcome.blocked else None

    def clear(self) -> None:
        """Forget the conversation.  A persisted session continues as a new session
        (new id, new transcript); the old one stays resumable.  The SessionEnd hooks ("clear")
        see the conversation that ends."""
        if self.hooks.has("SessionEnd", {"reason": "clear"}):
            ending = {"reason": "clear", "session_id": self.session_id, "transcript_path": self._hook_transcript_path()}
            with contextlib.suppress(RuntimeError):  # no running loop: nothing can run them
                self.hooks.run_owed("SessionEnd", ending)
        self.history = []
        self.tool_state.clear()
        self.tool_state["background_shells"] = self._background_shells
        self._hook_context.clear()
        self._session_start_source = "clear"
        self.transcript = None
        if self.store is not None:
            self.session_id = str(uuid.uuid4())
            self._use_store(self.store.for_session(self.session_id))

    # ------------------------------------------------------------ persistence

    def resume(self, session_id: str | None = None, *, fork: bool = False,
               loaded: Transcript | None = None) -> Transcript:
        """Continue a stored session of this directory (the latest when `session_id`
        is None; a unique id prefix is enough), or the one `loaded` already read
        (`store.load_transcript`).  Raises `SessionNotFound`.

        The history is repaired (`store.repair_history`) before use; the front end
        redraws the conversation from `store.replay_events(session.transcript)`.
        """
        if self._running:
            raise RuntimeError("cannot resume while a turn is running")
        directory = self.store.directory if self.store is not None else project_dir(self.cwd)
        transcript = loaded if loaded is not None else load_transcript(find_session(directory, session_id))
        store = TranscriptStore.reopen(transcript, self.cwd) if self.store is not None else None
        self.forked_from = None
        copied = False
        if store is not None and fork:
            # `--fork-session`: the stored session stays as it is; this one goes on in a copy.
            store.close()
            store, copied = self.store.for_session(str(uuid.uuid4())), True
        elif store is not None and not store.lock():
            # Another process is writing this session: go on in a copy rather than interleave.
            self.forked_from = transcript.session_id
            store, copied = self.store.for_session(str(uuid.uuid4())), True
        self.session_id = store.session_id if store is not None else transcript.session_id
        if self.forked_from:
            transcript.problems.append(self.fork_notice)
        self.history = list(transcript.history)
        self.tool_state.clear()
        self.tool_state["background_shells"] = self._background_shells
        self._hook_context.clear()
        self._session_start_source = "resume"
        self.transcript = transcript
        if store is not None:
            self._use_store(store)
            if transcript.repaired or copied:
                self.store.sync(self.history)
                self.store.commit()
        return transcript

    @property
    def fork_notice(self) -> str | None:
        """What to tell the person when `resume` forked a session another process holds."""
        if not self.forked_from:
            return None
        return (
            f"Session {self.forked_from[:8]} is open in another agent-tui process; continuing as a new "
            f"session {self.session_id[:8]} with a copy of its history."
        )

    def _use_store(self, store: TranscriptStore) -> None:
        if self.store is not None:
            self.store.close()
        self._detach_store()
        self.store = store
        store.on_error = lambda message: self.bus.publish(ev.Notice(kind="error", message=message))
        self._detach_store = self.bus.add_listener(store.record_event)
        self.hooks.session_id = self.session_id

    def _hooks_transcript(self) -> HookTranscript | None:
        """The transcript hook scripts read (engine/hook_transcript.py); None while no hook is configured."""
        if not self.hooks.table:
            return None
        kept = self._hook_transcript
        if kept is None or kept.session_id != self.session_id:
            if self.store is not None:
                path = self.store.assets_dir / "transcript.jsonl"
            else:
                self._hook_scratch = self._hook_scratch or tempfile.mkdtemp(prefix="agent-tui-hooks-")
                path = Path(self._hook_scratch) / f"{self.session_id}.jsonl"
            kept = self._hook_transcript = HookTranscript(path, session_id=self.session_id, cwd=self.cwd)
        return kept

    def _hook_transcript_path(self) -> str:
        kept = self._hooks_transcript()
        if kept is None:
            return ""
        if not self._running:  # between prompts (SessionStart, /clear): the history is the conversation
            kept.sync(self.history)
        return kept.ensure()

    def _persist(self, message: Message) -> None:
        """A message the loop completed: on disk now, fsynced when a model turn ends."""
        if self._hook_transcript is not None:
            self._hook_transcript.append(message)
        store = self.store
        if store is None:
            return
        store.append_message(message)
        if message["role"] == "user" and any(b.get("type") == "tool_result" for b in blocks(message)):
            store.commit()

    # ------------------------------------------------------------ context (/compact, /context)

    @property
    def compaction_settings(self) -> CompactionSettings:
        return self.options.compaction or CompactionSettings()

    @property
    def max_output_tokens(self) -> int:
        """The output limit requests start from."""
        return self.options.max_tokens or DEFAULT_MAX_TOKENS

    @property
    def auto_compact_threshold(self) -> int:
        """Context tokens at which the next request autocompacts (what the gauge marks)."""
        return self.compaction_settings.auto_compact_threshold(self.context_window, self.max_output_tokens)

    @property
    def fallback_model(self) -> str | None:
        return self.options.fallback_model

    @property
    def results_dir(self) -> Path:
        """Where the tool-result budget saves outputs too large for the context."""
        if self.options.session_dir is not None:
            base = self.options.session_dir
        elif self.store is not None:
            base = self.store.assets_dir
        else:
            base = Path(tempfile.gettempdir()) / "agent-tui" / self.session_id
        return base / "tool-results"

    def _current_tracking(self) -> ContextTracking:
        # A history replaced behind the loop's back (clear, resume, repair) no longer matches the last usage.
        if self._tracked_history is self.history:
            return self.context_tracking
        return self.context_tracking.forget_usage()

    def _system_after_compaction(self) -> list[dict[str, Any]]:
        if self.options.load_memory:
            self.reload_memory()
        return self.system_blocks()

    def system_blocks(self) -> list[dict[str, Any]]:
        """The system prompt as requests carry it: the static prompt, the memory files in a
        block of their own, then what was appended (each cached on its own, engine/models/caching.py)."""
        memory = self.memory.block()
        if not self.system_prompt:
            return []
        if not memory or memory not in self.system_prompt:
            return [text_block(self.system_prompt)]
        before, after = self.system_prompt.split(memory, 1)
        return [text_block(part) for part in (before.rstrip(), memory, after.strip()) if part]

    def add_usage_totals(self, usage: dict[str, int], by_model: dict[str, dict[str, int]]) -> None:
        """Count tokens spent outside the session's own queries too (a subagent's)."""
        add_usage(self.usage_totals, usage)
        for model, model_usage in by_model.items():
            add_usage(self.usage_by_model.setdefault(model, {}), model_usage)

    @property
    def cost_usd(self) -> float | None:
        """What the session's requests cost at list prices; None when a model has no known price."""
        return total_cost_usd(self.usage_by_model)

    def _cost_with(self, running: dict[str, dict[str, int]]) -> float | None:
        """The session's cost with what the running query has spent (not yet in its totals)."""
        merged = {model: dict(usage) for model, usage in self.usage_by_model.items()}
        for model, usage in running.items():
            add_usage(merged.setdefault(model, {}), usage)
        return total_cost_usd(merged)

    @property
    def prompt_caching(self) -> bool:
        return self.options.prompt_caching

    @property
    def thinking(self) -> str | int | None:
        return self.options.thinking

    @property
    def effort(self) -> str | None:
        return self.options.effort

    async def compact(self, instructions: str = "") -> Compacted | None:
        """`/compact [instructions]`: replace the history with a summary now.

        Waits for a running prompt to finish.  Everything the user sees comes
        on the bus (a notice when it starts, `compaction` and `usage` when it is
        done, an error notice when it fails); returns None when nothing changed.
        `abort()` stops it and leaves the history as it was."""
        self.start()
        async with self._lock:
            if not self.history:
                self.bus.publish(ev.Notice(kind="info", message="Nothing to compact yet."))
                return None
            self._abort = asyncio.Event()
            self._running = True
            usage: dict[str, int] = {}
            by_model: dict[str, dict[str, int]] = {}
            tools = [tool_to_api(t) for t in self.tools]
            env = PipelineEnv(
                model=self.model,
                model_name=self.model.name,
                window=self.context_window,
                max_output=self.max_output_tokens,
                system=self.system_blocks(),
                tools=tools,
                settings=self.compaction_settings,
                save_dir=self.results_dir,
                emit=self.bus.publish,
                abort=self._abort,
                retry=self.options.retry,
                usage_totals=usage,
                usage_by_model=by_model,
                prompt_caching=self.prompt_caching,
                hooks=self.hooks,
            )
            try:
                compacted = await compact_conversation(
                    self.history,
                    env,
                    trigger="manual",
                    instructions=instructions,
                    tokens_before=count_tokens(self.history, self._current_tracking(), env.overhead),
                )
            except CompactionFailed as exc:
                message = f"Compaction failed: {exc}. The conversation is unchanged."
                self.bus.publish(ev.Notice(kind="error", message=message))
                return None
            except CompactionInterrupted:
                message = "Compaction interrupted; the conversation is unchanged."
                self.bus.publish(ev.Notice(kind="interrupted", message=message))
                return None
            finally:
                self._running = False
                self.add_usage_totals(usage, by_model)
            self.history = compacted.messages
            self._system_after_compaction()
            self.context_tracking = ContextTracking()
            self._tracked_history = self.history
            if self.store is not None:
                self.store.sync(self.history)
                self.store.commit()
            return compacted

    async def context_breakdown(self, *, exact: bool = True) -> ContextBreakdown:
        """`/context`: what fills the context window (system prompt, memory files,
        tools, messages, tool results, free space).  With `exact`, the total comes
        from the count-tokens endpoint when the server offers one."""
        tools = [tool_to_api(t) for t in self.tools]
        total = None
        if exact and self.history:
            total = await self.model.count_tokens(
                ModelRequest(
                    model=self.model.name,
                    messages=normalize_for_api(self.history),
                    system=self.system_prompt,
                    tools=tools,
                )
            )
        return context_breakdown(
            model=self.model.name,
            system=self.system_prompt,
            memory=self.memory.block(),
            tools=tools,
            messages=self.history,
            tracking=self._current_tracking(),
            window=self.context_window,
            settings=self.compaction_settings,
            max_output=self.max_output_tokens,
            exact_total=total,
        )

    def reload_memory(self) -> Memory:
        """Re-read the memory files and put the new block in the system prompt."""
        old = self.memory.block()
        self.memory = load_memory(self.cwd)
        new = self.memory.block()
        if old and old in self.system_prompt:
            self.system_prompt = self.system_prompt.replace(old, new, 1)
        elif new:
            self.system_prompt = self.system_prompt.replace("</env>", "</env>\n\n" + new, 1)
        return self.memory

    async def start_mcp(
        self,
        servers: Mapping[str, Any] | None = None,
        *,
        start_timeout: float | None = None,
        call_timeout: float | None = None,
    ) -> list[McpServerStatus]:
        """Connect the MCP servers (default: the configured ones) and add their tools.

        Once per session; later calls wait for the first.  Servers connect
        concurrently; one that fails is reported with a notice and the session goes on.
        """
        if self._mcp_start is None:
            if servers is None and not self._configured_mcp_servers():
                return []
            self._mcp_start = asyncio.ensure_future(self._connect_mcp(servers, start_timeout, call_timeout))
        if self._mcp_start.cancelled():  # closed before the servers came up
            return []
        return await asyncio.shield(self._mcp_start)

    @property
    def mcp_servers(self) -> dict[str, Any]:
        """The configured MCP servers (`mcpServers`' shape): what connects, or connected."""
        return dict(self._configured_mcp_servers())

    def _configured_mcp_servers(self) -> Mapping[str, Any]:
        return self.options.mcp_servers or {}

    async def _connect_mcp(
        self, servers: Mapping[str, Any] | None, start_timeout: float | None, call_timeout: float | None
    ) -> list[McpServerStatus]:
        servers = self._configured_mcp_servers() if servers is None else servers
        if not servers:
            return []
        from .mcp import McpManager

        self.mcp = McpManager(servers, cwd=self.cwd, start_timeout=start_timeout, call_timeout=call_timeout,
                              sdk_relay=self.sdk_mcp_relay, client=_McpClientSide(self))
        statuses = await self.mcp.start()
        self._mcp_tools = self.mcp.tools()
        if self.mcp.resource_servers():
            from ..tools.mcp_resources import ListMcpResourcesTool, ReadMcpResourceTool

            self._mcp_tools += [ListMcpResourcesTool(self.mcp), ReadMcpResourceTool(self.mcp)]
        self.tools, shadowed = with_tools(self.tools, self._mcp_tools)
        for name in shadowed:
            message = f"MCP tool {name} not added: a tool of that name exists"
            self.bus.publish(ev.Notice(kind="warning", message=message))
        self._mcp_instructions = self.mcp.instructions()
        if self._mcp_instructions:
            self.system_prompt += "\n\n" + self._mcp_instructions
        for status in statuses:
            if status.state == "failed":
                self.bus.publish(ev.Notice(kind="error", message=f"MCP server {status.name} failed: {status.error}"))
        return statuses

    async def _start_watcher(self) -> None:
        """Files the model read are marked stale when they change on disk (Edit/Write then refuse)."""
        if self._watcher is not None or not self.options.watch_files:
            return
        self._watcher = ReadStateWatcher(self.tool_state, self.cwd, debounce_ms=50)
        await self._watcher.start()

    async def aclose(self, reason: str = "other") -> None:
        """Run the SessionEnd hooks (`reason`: Claude Code's, "prompt_input_exit" when the person
        quits the TUI, "other" otherwise); stop background agents, kill background commands;
        release the model client's connections, stop the file watcher and the MCP servers."""
        await self.hooks.settle()  # a /clear's SessionEnd first
        if self.hooks.has("SessionEnd", {"reason": reason}):
            with contextlib.suppress(Exception):
                await self.hooks.run("SessionEnd", {"reason": reason})
        await self.background_agents.aclose()
        await self.files_checkpointed()
        if self.checkpoints is not None:
            self.checkpoints.close()
        shells = list(self._background_shells.values())
        await asyncio.gather(*(shell.stop() for shell in shells), return_exceptions=True)
        if self._watcher is not None:
            await self._watcher.stop()
            self._watcher = None
        if self._mcp_start is not None and not self._mcp_start.done():
            self._mcp_start.cancel()
            await asyncio.gather(self._mcp_start, return_exceptions=True)
        if self.mcp is not None:
            await self.mcp.aclose()
        if self._session_start is not None:
            self._session_start.cancel()
        await self.hooks.aclose()
        if self.store is not None:
            self.store.close()
        if self._hook_scratch is not None:
            shutil.rmtree(self._hook_scratch, ignore_errors=True)
        await self.model.aclose()

    async def run_subagent(self, agent: AgentDefinition, input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """The Agent tool's call: a query of its own on this session's model, policy, hooks and bus."""
        # The subagent inherits the settings a prompt's query would get; its history and totals are its own.
        parent = self._query_params([], {}, {})
        return await run_subagent(parent, agent, input, ctx, cwd=self.cwd, on_usage=self.add_usage_totals)

    async def run_shell_command(self, command: str) -> ShellOutcome:
        """`!command`: the person's own Bash call (engine/shell_mode.py), through the permission policy,
        hooks and sandbox, shown on the bus; what it printed goes to the model with the next prompt.
        Waits for a running prompt; `interrupt()` stops it."""
        self.start()
        async with self._lock:
            self._abort = asyncio.Event()
            self._running = True
            try:
                outcome = await run_shell_command(
                    command, tools=self.tools, policy=self.policy, emit=self.bus.publish,
                    make_context=self.make_context, hooks=self.hooks, abort=self._abort,
                    options=ExecutorOptions(denials=self.permission_denials, clock=self.options.clock,
                                            before_tool=self.files_checkpointed))
            finally:
                self._running = False
        if outcome.ran:
            self._shell_context.append(outcome.context(command))
        return outcome

    async def deliver_notifications(self) -> Terminal | None:
        """Background agents reported while no prompt ran: a turn of its own gives their reports to
        the model (as Claude Code does); None when nothing waits (a prompt took them first)."""
        if not self.background_agents.pending:
            return None
        return await self.submit(_NOTIFICATION_TURN)

    async def finish_background(self) -> Terminal | None:
        """Print mode's end: wait for the background agents still running, then give the model their
        reports in a turn of its own; None when there was nothing to wait for."""
        await self.background_agents.wait()
        return await self.deliver_notifications()

    @property
    def memory_file(self) -> Path:
        """The project memory file `#text` appends to (the one the project uses)."""
        return project_memory_file(self.cwd)

    def remember(self, text: str) -> Path:
        """`#text`: append it to the project memory file; the system prompt has it from the next request."""
        path = append_memory(self.cwd, text)
        if self.options.load_memory:
            self.reload_memory()
        return path

    def launch_background_agent(self, agent: AgentDefinition, input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """The Agent tool's `run_in_background`: the subagent runs beside the conversation."""
        return self.background_agents.launch(agent, input, ctx)

    async def files_checkpointed(self) -> None:
        """The checkpoints' snapshots asked for so far are taken (in a thread of their own,
        engine/checkpoints.py): before a tool runs (mostly done while the model still writes the
        call), when a prompt ends, and when the session closes."""
        if self.checkpoints is not None and self.checkpoints.pending:
            await asyncio.to_thread(self.checkpoints.settle)

    def make_context(self, tool_use_id: str) -> ToolContext:
        return ToolContext(
            cwd=self.cwd,
            abort=self._abort,
            session_dir=self.options.session_dir or (self.store.assets_dir if self.store else None),
            state=self.tool_state,
            tool_use_id=tool_use_id,
            read_denied=self.policy.read_deny_check(self.cwd),
            working_dirs=tuple(self.policy.working_directories(self.cwd)),
            files=self._files,
        )

    async def submit(self, prompt: str | list[dict[str, Any]], *, allowed_tools: Sequence[str] = (),
                     prompt_id: str | None = None) -> Terminal:
        """Run one prompt to its end.  Prompts submitted while one runs wait their turn.

        `allowed_tools`: rules allowed without asking while this prompt runs (a custom
        command's `allowed-tools`); `prompt_id`: the prompt's uuid (`user_message`, its checkpoint)."""
        await self.start_mcp()
        self.start()
        await self._start_watcher()
        queued = self._lock.locked()
        async with self._lock:
            with self._rules_allowed(allowed_tools):
                terminal = await self._run(prompt, queued, prompt_id or str(uuid.uuid4()))
            # The prompt ends once its checkpoint of the files as it left them is taken.
            await self.files_checkpointed()
            return terminal

    async def expand_command(self, command: CustomCommand, arguments: str = "") -> str:
        """A custom command's prompt: its arguments filled in, then each ``!`cmd` `` run (under its
        `allowed-tools` and the permission rules, asking when they ask) and replaced by the output.
        `CommandExpansionError` when a line may not run; nothing is sent then."""
        from .command_expansion import expand_shell_spans

        text = command.expand(arguments)
        if not command.runs_shell:
            return text
        bash = next((t for t in self.tools if t.name == "Bash"), None)
        with self._rules_allowed(command.allowed_tools):
            return await expand_shell_spans(text, command_name=command.name, bash=bash, policy=self.policy,
                                            cwd=self.cwd, make_context=self.make_context, emit=self.bus.publish)

    @contextlib.contextmanager
    def _rules_allowed(self, rules: Sequence[str]) -> Iterator[None]:
        """`rules` allowed while the block runs (a custom command's `allowed-tools`)."""
        entries = []
        for rule in rules:
            try:
                entries.append(self.policy.add_rule(rule, source="command"))
            except ValueError as exc:
                self.bus.publish(ev.Notice(kind="error", message=f"allowed-tools rule {rule!r} ignored: {exc}"))
        try:
            yield
        finally:
            for entry in entries:
                with contextlib.suppress(KeyError):
                    self.policy.remove_rule(entry)

    def _query_params(
        self, messages: list[Message], usage: dict[str, int], by_model: dict[str, dict[str, int]]
    ) -> QueryParams:
        """One prompt's query: this session's model, tools, policy, bus and settings."""
        return QueryParams(
            messages=messages,
            model=self.model,
            tools=self.tools,
            policy=self.policy,
            emit=self.bus.publish,
            abort=self._abort,
            make_context=self.make_context,
            system=self.system_blocks(),
            model_name=self.model.name,
            max_tokens=self.options.max_tokens,
            max_turns=self.options.max_turns,
            max_concurrency=self.options.max_concurrency,
            context_window=self.context_window,
            retry=self.options.retry,
            executor_options=ExecutorOptions(
                max_concurrency=self.options.max_concurrency,
                denials=self.permission_denials,
                clock=self.options.clock,
                before_tool=self.files_checkpointed,
            ),
            usage_totals=usage,
            usage_by_model=by_model,
            hooks=self.hooks,
            on_message=self._persist,
            fallback_model=self.fallback_model,
            max_budget_tokens=self.options.max_budget_tokens,
            max_budget_usd=self.options.max_budget_usd,
            cost_usd=lambda: self._cost_with(by_model),
            compaction=self.compaction_settings,
            results_dir=self.results_dir,
            reload_system=self._system_after_compaction,
            tracking=self._current_tracking(),
            prompt_caching=self.prompt_caching,
            thinking=self.thinking,
            effort=self.effort,
            take_notifications=self.background_agents.take_notifications,
            memo=self._memo,
        )

    async def _ask_for_structured_output(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The Stop hook of `--json-schema`: the turn goes on until the model has called StructuredOutput."""
        return {} if STRUCTURED_STATE in self.tool_state else {"decision": "block", "reason": STRUCTURED_REMINDER}

    def _structured_output_kept(self, terminal: Terminal) -> Terminal:
        """A prompt that ended well without the structured output it owed is an error (Claude Code's
        error_max_structured_output_retries)."""
        if self.options.json_schema is None or terminal.is_error or STRUCTURED_STATE in self.tool_state:
            return terminal
        text = f"The model ended without giving the structured output ({STRUCTURED_OUTPUT} was not called)"
        self.bus.publish(ev.Notice(kind="error", message=text))
        return replace(terminal, reason=TerminalReason.MAX_STRUCTURED_OUTPUT_RETRIES, error=text)

    def prepare_history(self) -> asyncio.Future[None] | None:
        """Do now, in a worker thread, what the next prompt's first request and its end would do
        to the whole history (each step's result and JSON per message, the history's check: the
        memo, engine/memo.py), so that prompt costs what its own messages do.  For a resumed
        session, whose first prompt would otherwise work through all of it; between prompts (the
        next one waits for this).  None when there is nothing to do."""
        if self._running or self._warming is not None or not self.history:
            return None
        history = list(self.history)
        params = self._query_params([*history, user_message("(the next prompt)")], {}, {})

        def warm() -> None:
            warm_request(params)
            self._ended(history)

        warming = self._warming = asyncio.ensure_future(asyncio.to_thread(warm))
        # A failed warm-up costs the first prompt its time, nothing else: it is not reported.
        warming.add_done_callback(lambda done: done.cancelled() or done.exception())
        return warming

    def _ended(self, history: list[Message]) -> list[str]:
        """What a prompt's end does to the history it ends with, in a worker thread: its check
        (the problems found), and its digest for the next prompt's checkpoint."""
        problems = check_history_since(history, self._memo.ended)
        if self.checkpoints is not None:
            self.checkpoints.digest_ahead(history)
        return problems

    async def _warmed(self) -> None:
        warming, self._warming = self._warming, None
        if warming is not None:
            with contextlib.suppress(Exception):
                await warming

    async def _run(self, prompt: str | list[dict[str, Any]], queued: bool, prompt_id: str) -> Terminal:
        self._abort = asyncio.Event()
        self.tool_state.pop(STRUCTURED_STATE, None)
        self._running = True
        started = time.monotonic()
        notes = [text_block(note) for note in [*self._shell_context, *self.background_agents.take_notifications()]]
        notification = prompt is _NOTIFICATION_TURN
        if notification and not notes:  # a prompt typed meanwhile took the reports
            self._running = False
            return Terminal(reason=TerminalReason.COMPLETED, messages=list(self.history), turns=0)
        self._shell_context = []
        text = "" if notification else prompt if isinstance(prompt, str) else _prompt_text(prompt)
        self.bus.publish(ev.UserMessage(text=text, queued=queued, uuid=prompt_id, notification=notification))
        resources = [] if notification else await self._resource_mentions(text)
        extra = notes + resources
        content = notes if notification else extra + blocks(user_message(prompt)) if extra else prompt
        messages = list(self.history) + [user_message(content)]
        usage: dict[str, int] = {}
        by_model: dict[str, dict[str, int]] = {}
        if (kept := self._hooks_transcript()) is not None:
            kept.sync(self.history)
        try:
            dropped = None if notification else await self._prompt_hooks(text, messages)
            if dropped is None:
                if self.store is not None:
                    self.store.sync(self.history)  # a history given or replaced since the last prompt
                self._persist(messages[-1])
                await self._warmed()
            terminal = dropped or await query(self._query_params(messages, usage, by_model))
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
        terminal = self._structured_output_kept(terminal)
        history = terminal.messages
        # Proportional to the history: in a worker thread, never on the event loop's (the TUI draws there).
        if await asyncio.to_thread(self._ended, history):
            history = ensure_tool_result_pairing(history)
        self.history = history
        self.context_tracking = terminal.tracking
        self._tracked_history = terminal.messages
        if self.store is not None:
            self.store.sync(history)
        if self._hook_transcript is not None:
            self._hook_transcript.sync(history)
        self.turns += terminal.turns
        self.add_usage_totals(usage, by_model)
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
        if self.store is not None:
            self.store.commit()
        return terminal

    # ------------------------------------------------------------ hooks

    def _begin_session_start(self) -> None:
        source = self._session_start_source
        if source is None or self._session_start is not None:
            return
        if self.hooks.has("SessionStart", {"source": source}):
            self._session_start = asyncio.get_running_loop().create_task(self._session_start_hooks(source))
        self._session_start_source = None

    async def setup(self, trigger: str, *, start: bool = False) -> None:
        """Setup hooks (`--init`: "init", `--maintenance`: "maintenance"), before the first prompt;
        what they add to the context rides with it.  `start`: the SessionStart hooks too, now
        (`--init-only`, which sends no prompt)."""
        fields = {"trigger": trigger}
        if self.hooks.has("Setup", fields):
            outcome = await self.hooks.run("Setup", fields)
            label = hook_label("Setup", fields)
            self._hook_context.extend(context_text(label, c) for c in outcome.additional_context)
        if start:
            self._begin_session_start()
            if self._session_start is not None:
                task, self._session_start = self._session_start, None
                await task

    async def _session_start_hooks(self, source: str) -> None:
        fields = {"source": source}
        outcome = await self.hooks.run("SessionStart", fields)
        label = hook_label("SessionStart", fields)
        self._hook_context.extend(context_text(label, c) for c in outcome.additional_context)

    async def _prompt_hooks(self, text: str, messages: list[Message]) -> Terminal | None:
        """SessionStart (when due) and UserPromptSubmit hooks.

        They may add context to the prompt (`messages[-1]`), or drop it: then the
        returned Terminal ends the turn with the history as it was.
        """
        self._begin_session_start()
        if self._session_start is not None:
            task, self._session_start = self._session_start, None
            await task
        outcome = await self.hooks.run("UserPromptSubmit", {"prompt": text}, abort=self._abort)
        if outcome.blocked or outcome.prevent_continuation:
            reason = (outcome.reason if outcome.blocked else outcome.stop_reason) or "no reason given"
            self.bus.publish(ev.Notice(kind="hook", message=f"Prompt blocked by a UserPromptSubmit hook: {reason}"))
            return Terminal(reason=TerminalReason.HOOK_STOPPED, messages=list(self.history), turns=0, error=reason)
        # Session context comes before the prompt (as at the start of a conversation), prompt context after it.
        before = [text_block(c) for c in self._hook_context]
        after = [text_block(context_text("UserPromptSubmit", c)) for c in outcome.additional_context]
        self._hook_context = []
        if before or after:
            messages[-1] = user_message(before + blocks(messages[-1]) + after)
        return None


# The prompt of a turn that only carries background agents' reports (`deliver_notifications`).
_NOTIFICATION_TURN = "\x00notifications"


class _McpClientSide:
    """What the session offers its MCP servers: its working directories as roots, and the
    answers to their elicitations (engine/mcp_features.py)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def roots(self) -> list[Path]:
        session = self._session
        return session.policy.working_directories(session.cwd)

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        return await self._session._answer_elicitation(request)


def _prompt_text(content: list[dict[str, Any]]) -> str:
    """What the person typed: the text blocks, without the @-file attachments."""
    return "".join(b.get("text", "") for b in content if b.get("type") == "text" and not is_attachment(b))

