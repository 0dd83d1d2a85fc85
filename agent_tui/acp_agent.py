"""`agent-tui --acp`: an Agent Client Protocol agent (protocol version 1) for Zed, Toad and other
editors, built with the `agent-client-protocol` package (docs/architecture.md §8).

Each ACP session is a `Session` the command line's factory builds for the session's folder (the
same settings, tools and transcripts as `-c` / `-r`).  Requests map onto the session's methods:
`session/prompt` is `submit()` and answers with the stop reason, `session/cancel` is `interrupt()`,
`session/set_mode` is `set_permission_mode()`, the client's MCP servers go to `set_mcp_servers()`
and the client's `fs/*` methods to `use_files()`.  Bus events go back as `session/update`s
(acp_updates.py), a permission request as `session/request_permission`.  `session/load` replays a
stored conversation as updates; `session/list`, `session/resume` and `session/close` are served too.

stdin closing ends every session: running prompts are interrupted (their histories stay valid),
the sessions are closed, and the process exits 0.  Logs go to stderr, never stdout (acp_wire.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, schema
from acp.agent.connection import AgentSideConnection
from acp.helpers import text_block, update_available_commands

from . import __version__
from .acp_updates import Update, UpdateTranslator, tool_title
from .acp_wire import StdioJsonRpc, protocol_stdout
from .engine import PermissionAnswer, Session, SessionNotFound, list_sessions, replay_events
from .engine import events as ev
from .stdin_lines import StdinLines

# The command line's factory: a session for a folder, as `agent-tui` would start there.
SessionFactory = Callable[[Path], Session]

MODES: dict[str, tuple[str, str]] = {
    "default": ("Default", "Asks before edits and commands"),
    "acceptEdits": ("Accept edits", "Edits in the working folders without asking; asks before commands"),
    "plan": ("Plan", "Reads and plans; makes no changes"),
    "dontAsk": ("Don't ask", "Denies whatever no rule allows, without asking"),
    "bypassPermissions": ("Bypass permissions", "Runs every tool without asking"),
}
# Built-in slash commands an editor may send as a prompt (the project's own commands come too).
COMPACT = "compact"
PAGE = 50
# How long the end of stdin waits for the requests received (interrupted prompts) to be answered.
SHUTDOWN_SECONDS = 10.0

log = logging.getLogger("agent_tui.acp")


class ClientFiles:
    """The client's `fs/read_text_file` / `fs/write_text_file` as the tools' EditorFiles."""

    def __init__(self, conn: AgentSideConnection, session_id: str, reads: bool, writes: bool) -> None:
        self._conn = conn
        self._session_id = session_id
        self.reads = reads
        self.writes = writes

    async def read_text(self, path: Path) -> str:
        response = await self._conn.read_text_file(session_id=self._session_id, path=str(path))
        return response.content

    async def write_text(self, path: Path, text: str) -> None:
        await self._conn.write_text_file(session_id=self._session_id, path=str(path), content=text)


class Outbox:
    """One session's updates, sent in publish order by one task; `drained()` waits for what is queued.
    Consecutive text (or thinking) chunks queued meanwhile go as one."""

    def __init__(self, send: Callable[[Update], Awaitable[None]]) -> None:
        self._send = send
        self._queue: asyncio.Queue[Update] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._run())
        self._failed = False

    def put(self, update: Update) -> None:
        self._queue.put_nowait(update)

    async def drained(self) -> None:
        await self._queue.join()

    async def aclose(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            for update in _merged(batch):
                try:
                    await self._send(update)
                except Exception as exc:  # a client gone or refusing an update: the session goes on
                    if not self._failed:
                        log.warning("agent-tui: acp: session/update not delivered (%s); the session goes on", exc)
                    self._failed = True
            for _ in batch:
                self._queue.task_done()


def _merged(batch: list[Update]) -> list[Update]:
    out: list[Update] = []
    for update in batch:
        last = out[-1] if out else None
        if (isinstance(update, (schema.AgentMessageChunk, schema.AgentThoughtChunk)) and type(last) is type(update)
                and isinstance(update.content, schema.TextContentBlock)
                and isinstance(last.content, schema.TextContentBlock)):
            out[-1] = last.model_copy(update={"content": text_block(last.content.text + update.content.text)})
        else:
            out.append(update)
    return out


@dataclass
class LiveSession:
    """An ACP session and the agent-tui session behind it."""

    id: str
    session: Session
    translator: UpdateTranslator
    outbox: Outbox
    cancelled: bool = False
    detach: Callable[[], None] = lambda: None
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)


class AcpAgent:
    """The agent side of ACP (the package's `Agent` protocol) over agent-tui sessions."""

    def __init__(self, make_session: SessionFactory) -> None:
        self._make_session = make_session
        self._conn: AgentSideConnection | None = None
        self._fs = schema.FileSystemCapabilities()
        self._live: dict[str, LiveSession] = {}

    def on_connect(self, conn: AgentSideConnection) -> None:
        self._conn = conn

    # ------------------------------------------------------------ initialize

    async def initialize(self, protocol_version: int, client_capabilities: schema.ClientCapabilities | None = None,
                         client_info: schema.Implementation | None = None, **_: Any) -> schema.InitializeResponse:
        if client_capabilities is not None and client_capabilities.fs is not None:
            self._fs = client_capabilities.fs
        if client_info is not None:
            log.info("agent-tui: acp: client %s %s", client_info.name, client_info.version)
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                # Images go to the model as image blocks, embedded files as context text; no audio.
                prompt_capabilities=schema.PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=schema.McpCapabilities(http=True, sse=True),
                session_capabilities=schema.SessionCapabilities(
                    list=schema.SessionListCapabilities(), resume=schema.SessionResumeCapabilities(),
                    close=schema.SessionCloseCapabilities()),
            ),
            # An API key, a base URL or the offline demo model: nothing to sign in to.
            auth_methods=[],
            agent_info=schema.Implementation(name="agent-tui", title="agent-tui", version=__version__),
        )

    async def authenticate(self, method_id: str, **_: Any) -> None:
        raise RequestError.invalid_params({"details": f"agent-tui has no authentication method {method_id!r}"})

    # ------------------------------------------------------------ sessions

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None,
                          additional_directories: list[str] | None = None, **_: Any) -> schema.NewSessionResponse:
        session = self._build(cwd, mcp_servers, additional_directories)
        live = self._attach(session.session_id, session)
        return schema.NewSessionResponse(session_id=live.id, modes=self._modes(session))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None,
                           **_: Any) -> schema.LoadSessionResponse:
        live = await self._resume(cwd, session_id, mcp_servers, additional_directories, replay=True)
        return schema.LoadSessionResponse(modes=self._modes(live.session))

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None,
                             additional_directories: list[str] | None = None,
                             **_: Any) -> schema.ResumeSessionResponse:
        live = await self._resume(cwd, session_id, mcp_servers, additional_directories, replay=False)
        return schema.ResumeSessionResponse(modes=self._modes(live.session))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **_: Any) -> schema.ListSessionsResponse:
        folder = _folder(cwd) if cwd else Path.cwd()
        start = int(cursor) if cursor and cursor.isdigit() else 0
        infos = list_sessions(folder)
        page = infos[start:start + PAGE]
        return schema.ListSessionsResponse(
            sessions=[schema.SessionInfo(session_id=i.session_id, cwd=str(folder), title=i.first_prompt or None,
                                         updated_at=i.modified.isoformat()) for i in page],
            next_cursor=str(start + PAGE) if start + PAGE < len(infos) else None)

    async def close_session(self, session_id: str, **_: Any) -> schema.CloseSessionResponse:
        self._live_session(session_id)
        await self._close(session_id)
        return schema.CloseSessionResponse()

    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> schema.SetSessionModeResponse:
        live = self._live_session(session_id)
        try:
            live.session.set_permission_mode(mode_id)
        except ValueError as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        await live.outbox.drained()  # current_mode_update goes before the answer
        return schema.SetSessionModeResponse()

    def _build(self, cwd: str, mcp_servers: list[Any] | None, directories: list[str] | None) -> Session:
        folder = _folder(cwd)
        try:
            session = self._make_session(folder)
        except ValueError as exc:
            raise RequestError.internal_error({"details": f"cannot start a session in {folder}: {exc}"}) from None
        for directory in directories or []:
            session.add_directory(directory)
        client_servers = _mcp_servers(mcp_servers or [])
        if client_servers:
            # The editor's servers join the settings' (a name both use: the editor's).
            session.set_mcp_servers({**session.mcp_servers, **client_servers})
        return session

    async def _resume(self, cwd: str, session_id: str, mcp_servers: list[Any] | None, directories: list[str] | None,
                      *, replay: bool) -> LiveSession:
        if session_id in self._live:
            await self._close(session_id)  # this process holds it: start it again from its transcript
        session = self._build(cwd, mcp_servers, directories)
        try:
            transcript = session.resume(session_id)
        except SessionNotFound as exc:
            await session.aclose()
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id, "details": str(exc)}) from None
        for problem in transcript.problems:
            print(f"agent-tui: acp: {problem}", file=sys.stderr, flush=True)
        live = self._attach(session_id, session, commands=False)
        if replay:
            live.translator.replaying = True
            for event in replay_events(transcript):
                for update in live.translator.updates(event):
                    live.outbox.put(update)
            live.translator.replaying = False
        live.outbox.put(self._commands(session))
        await live.outbox.drained()
        return live

    def _attach(self, session_id: str, session: Session, *, commands: bool = True) -> LiveSession:
        conn = self._connection()
        translator = UpdateTranslator(session.cwd, cost=lambda: session.cost_usd)

        async def send(update: Update) -> None:
            await conn.session_update(session_id=session_id, update=update)

        live = LiveSession(session_id, session, translator, Outbox(send))
        live.detach = session.add_listener(lambda event: self._on_event(live, event))
        if self._fs.read_text_file or self._fs.write_text_file:
            session.use_files(ClientFiles(conn, session_id, bool(self._fs.read_text_file),
                                          bool(self._fs.write_text_file)))
        self._live[session_id] = live
        if commands:
            live.outbox.put(self._commands(session))
        return live

    def _live_session(self, session_id: str) -> LiveSession:
        live = self._live.get(session_id)
        if live is None:
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id,
                                                              "details": "no such session in this agent"})
        return live

    def _connection(self) -> AgentSideConnection:
        if self._conn is None:
            raise RequestError.internal_error({"details": "no client connection"})
        return self._conn

    async def _close(self, session_id: str) -> None:
        live = self._live.pop(session_id, None)
        if live is None:
            return
        live.session.interrupt()
        await asyncio.gather(*live.tasks, return_exceptions=True)
        live.detach()
        await live.outbox.drained()
        await live.outbox.aclose()
        await live.session.aclose()

    @staticmethod
    def _modes(session: Session) -> schema.SessionModeState:
        return schema.SessionModeState(
            current_mode_id=session.permission_mode,
            available_modes=[schema.SessionMode(id=mode, name=name, description=description)
                             for mode, (name, description) in MODES.items()])

    @staticmethod
    def _commands(session: Session) -> Update:
        commands = [schema.AvailableCommand(name=COMPACT, description="Summarise the conversation to free context",
                                            input=schema.AvailableCommandInput(
                                                root=schema.UnstructuredCommandInput(hint="instructions")))]
        for command in session.custom_commands.values():
            hint = command.argument_hint
            commands.append(schema.AvailableCommand(
                name=command.name, description=command.description or f"/{command.name}",
                input=schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(hint=hint)) if hint else None))
        return update_available_commands(commands)

    # ------------------------------------------------------------ prompts

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> schema.PromptResponse:
        live = self._live_session(session_id)
        content = prompt_content(prompt)
        live.cancelled = False
        terminal = await self._submit(live, content)
        await live.outbox.drained()
        if terminal is None:
            return schema.PromptResponse(stop_reason="cancelled" if live.cancelled else "end_turn")
        return schema.PromptResponse(stop_reason=stop_reason(terminal, cancelled=live.cancelled),
                                     usage=_usage(terminal.usage))

    async def _submit(self, live: LiveSession, content: str | list[dict[str, Any]]) -> Any:
        """Run the prompt (a `/command` expanded first); None for `/compact`, which is no turn."""
        session = live.session
        if isinstance(content, str) and content.startswith("/"):
            name, _, arguments = content[1:].partition(" ")
            if name == COMPACT:
                await session.compact(arguments.strip())
                return None
            command = session.custom_commands.get(name)
            if command is not None:
                # Its !`cmd` lines run first (a line that may not run raises CommandExpansionError).
                prompt = await session.expand_command(command, arguments)
                return await session.submit(prompt, allowed_tools=command.allowed_tools)
        return await session.submit(content)

    async def cancel(self, session_id: str, **_: Any) -> None:
        live = self._live.get(session_id)
        if live is not None:
            live.cancelled = True
            live.session.interrupt()

    # ------------------------------------------------------------ events

    def _on_event(self, live: LiveSession, event: ev.Event) -> None:
        for update in live.translator.updates(event):
            live.outbox.put(update)
        if type(event) is ev.UserMessage and live.cancelled:
            live.session.interrupt()  # cancelled before the turn began running (MCP servers starting)
        elif type(event) is ev.PermissionRequested and event.future is not None:
            task = asyncio.ensure_future(self._ask(live, event))
            live.tasks.add(task)
            task.add_done_callback(live.tasks.discard)
        elif type(event) is ev.Notice:
            print(f"agent-tui: acp: session {live.id[:8]}: {event.message}", file=sys.stderr, flush=True)

    async def _ask(self, live: LiveSession, event: ev.PermissionRequested) -> None:
        """`session/request_permission` for a call waiting on the person; its answer resolves the Future."""
        await live.outbox.drained()  # the client has seen the call it is asked about
        try:
            if event.tool_name == "AskUserQuestion":
                answer = await self._questions(live, event)
            else:
                answer = await self._permission(live, event)
        except Exception as exc:  # the client gone or answering nonsense: the call does not run
            answer = PermissionAnswer("deny", message=f"Permission to use {event.tool_name} was not granted: {exc}")
        if event.future is not None and not event.future.done():
            event.future.set_result(answer)

    async def _permission(self, live: LiveSession, event: ev.PermissionRequested) -> PermissionAnswer:
        rule = event.suggested_rule
        plan_exit = event.tool_name == "ExitPlanMode"
        options = [schema.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once")]
        if plan_exit:
            options.append(schema.PermissionOption(option_id="allow_always", kind="allow_always",
                                                   name="Allow, and accept edits from now on"))
        elif rule:
            options.append(schema.PermissionOption(option_id="allow_always", name=f"Always allow {rule}",
                                                   kind="allow_always"))
        options.append(schema.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"))
        if rule:
            options.append(schema.PermissionOption(option_id="reject_always", name=f"Always reject {rule}",
                                                   kind="reject_always"))
        title = tool_title(event.tool_name, live.translator.summary(event.tool_use_id))
        response = await self._connection().request_permission(
            session_id=live.id, tool_call=live.translator.permission_call(event, title), options=options)
        outcome = response.outcome
        chosen = outcome.option_id if isinstance(outcome, schema.AllowedOutcome) else "reject_once"
        if chosen == "allow_always" and plan_exit:
            live.session.set_permission_mode("acceptEdits")
            return PermissionAnswer("allow")
        if chosen in ("allow_once", "allow_always"):
            # allow_always: the rule `a` writes, to the project's local settings.
            return PermissionAnswer("allow", remember=chosen == "allow_always")
        if chosen == "reject_always" and rule:
            with contextlib.suppress(ValueError):
                live.session.add_permission_rule(rule, "deny")
        return PermissionAnswer("deny")

    async def _questions(self, live: LiveSession, event: ev.PermissionRequested) -> PermissionAnswer:
        """AskUserQuestion: each question as a permission request whose options are its answers."""
        answers: dict[str, str] = {}
        for question in event.input.get("questions") or []:
            labels = [str(o.get("label", "")) for o in question.get("options") or [] if isinstance(o, dict)]
            options = [schema.PermissionOption(option_id=str(n), name=label, kind="allow_once")
                       for n, label in enumerate(labels)]
            options.append(schema.PermissionOption(option_id="reject_once", name="Skip", kind="reject_once"))
            call = schema.ToolCallUpdate(tool_call_id=event.tool_use_id, title=str(question.get("question", "")),
                                         kind="other", status="pending")
            response = await self._connection().request_permission(session_id=live.id, tool_call=call,
                                                                   options=options)
            outcome = response.outcome
            if not isinstance(outcome, schema.AllowedOutcome) or not outcome.option_id.isdigit():
                return PermissionAnswer("deny")
            answers[str(question.get("question", ""))] = labels[int(outcome.option_id)]
        return PermissionAnswer("allow", updated_input={**event.input, "answers": answers})

    # ------------------------------------------------------------ the end

    def interrupt_all(self) -> None:
        """stdin closed: stop what runs (the histories stay valid, as after session/cancel)."""
        for live in self._live.values():
            live.cancelled = True
            live.session.interrupt()

    async def close_all(self) -> None:
        for session_id in list(self._live):
            await self._close(session_id)


def stop_reason(terminal: Any, *, cancelled: bool) -> str:
    """ACP's stop reason for how the turn ended; a failure is a JSON-RPC error with its text."""
    reason = terminal.reason.value
    if cancelled:
        return "cancelled"
    if reason in ("completed", "stop_hook_prevented", "hook_stopped", "aborted_streaming", "aborted_tools"):
        return "end_turn"  # an abort not asked for by session/cancel: a permission the person rejected
    if reason == "max_turns":
        return "max_turn_requests"
    if reason in ("max_output_tokens", "token_budget"):
        return "max_tokens"
    if terminal.refused:
        return "refusal"
    raise RequestError.internal_error({"details": terminal.error or reason, "terminalReason": reason})


def _usage(usage: dict[str, int]) -> schema.Usage:
    read = usage.get("cache_read_input_tokens", 0)
    write = usage.get("cache_creation_input_tokens", 0)
    inp, out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    return schema.Usage(total_tokens=inp + out + read + write, input_tokens=inp, output_tokens=out,
                        cached_read_tokens=read, cached_write_tokens=write)


def prompt_content(blocks: list[Any]) -> str | list[dict[str, Any]]:
    """ACP content blocks as the prompt the session takes: plain text when it is all text."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, schema.ImageContentBlock):
            out.append({"type": "image", "source": {"type": "base64", "media_type": block.mime_type,
                                                    "data": block.data}})
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            out.append(_resource(block.resource))
        elif isinstance(block, schema.ResourceContentBlock):
            out.append({"type": "text", "text": f"[@{block.name}]({block.uri})"})
        else:
            raise RequestError.invalid_params({"details": f"{type(block).__name__} prompts are not supported"})
    if all(b["type"] == "text" for b in out):
        return "".join(b["text"] for b in out)
    return out


def _resource(resource: Any) -> dict[str, Any]:
    if isinstance(resource, schema.TextResourceContents):
        return {"type": "text", "text": f'<context ref="{resource.uri}">\n{resource.text}\n</context>'}
    mime = resource.mime_type or ""
    if mime.startswith("image/"):
        return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": resource.blob}}
    return {"type": "text", "text": f"[{resource.uri}: {mime or 'binary'} content, not included]"}


def _folder(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise RequestError.invalid_params({"details": f"cwd must be an absolute path, not {cwd!r}"})
    if not path.is_dir():
        raise RequestError.invalid_params({"details": f"no such folder: {cwd}"})
    return path.resolve()


def _mcp_servers(servers: list[Any]) -> dict[str, dict[str, Any]]:
    """The client's MCP servers in the settings' `mcpServers` shape."""
    out: dict[str, dict[str, Any]] = {}
    for server in servers:
        if isinstance(server, schema.McpServerStdio):
            out[server.name] = {"command": server.command, "args": list(server.args),
                                "env": {e.name: e.value for e in server.env}}
        elif isinstance(server, (schema.HttpMcpServer, schema.SseMcpServer)):
            out[server.name] = {"type": server.type, "url": server.url,
                                "headers": {h.name: h.value for h in server.headers}}
        else:
            print(f"agent-tui: acp: MCP server {getattr(server, 'name', '?')!r}: "
                  f"{type(server).__name__} is not supported, ignored", file=sys.stderr, flush=True)
    return out


async def serve_stdio(make_session: SessionFactory) -> int:
    """Serve ACP on stdin/stdout until stdin closes (or SIGTERM); the exit status."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    out = protocol_stdout()
    agent = AcpAgent(make_session)
    transport = StdioJsonRpc(await StdinLines(sys.stdin).open(), out)
    conn = AgentSideConnection(agent, transport, listening=False, use_unstable_protocol=True)
    listening = asyncio.ensure_future(conn.listen())
    terminated: list[bool] = []

    def on_sigterm() -> None:
        terminated.append(True)
        listening.cancel()

    # SIGTERM (an editor closing) ends the sessions as the end of stdin does.
    with contextlib.suppress(NotImplementedError, RuntimeError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await listening
    finally:
        # The end of stdin: running prompts are interrupted and every request received is answered
        # (while the client may still read), then the sessions close.
        agent.interrupt_all()
        await transport.answered(SHUTDOWN_SECONDS)
        await agent.close_all()
        await conn.close()
    return 128 + signal.SIGTERM if terminated else 0
