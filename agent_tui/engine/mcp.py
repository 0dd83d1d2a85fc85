"""MCP client: connect the `mcpServers` of the settings and serve their tools.

Each server is one `McpConnection` whose `ClientSession` lives in a single
long-lived task: anyio cancel scopes must be entered and left in the same
task, so callers never touch the session.  They put a request on the
connection's queue and await a future; the owner task runs each request as a
child of its task group (calls to one server run in parallel), bounded by the
per-call timeout and cancellable from the caller's side (abort).

A server that fails to start, crashes or hangs is a state and an error text,
never an exception out of the session: its calls answer with `McpCallError`,
which the tool turns into an `is_error` result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from .. import __version__
from ..tools.mcp import McpCallError, McpTool, McpToolSpec, ProgressSink
from ..tools.mcp_resources import McpResource
from .mcp_features import ElicitationRequest, McpClientSide, McpPrompt, McpPromptArgument
from .mcp_stdio import MAX_MESSAGE_BYTES, stdio_transport

McpState = Literal["connecting", "connected", "failed", "closed"]

# `(server name, JSON-RPC message) -> the server's JSON-RPC answer`: how a `"type": "sdk"` server,
# which lives in the program driving agent-tui (Claude's Agent SDK), is reached.
SdkRelay = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

# Claude Code's names and units (milliseconds) for the two timeouts.
START_TIMEOUT_ENV = "MCP_TIMEOUT"
CALL_TIMEOUT_ENV = "MCP_TOOL_TIMEOUT"
DEFAULT_START_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 600.0
# How long a polite shutdown (stdin closed, then the SDK's terminate/kill) may take.
CLOSE_TIMEOUT = 8.0
# How long a server may take to list its prompts or resources as it connects.
LIST_TIMEOUT = 10.0
STDERR_TAIL_BYTES = 2000

CLIENT_INFO = types.Implementation(name="agent-tui", version=__version__)


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One entry of `mcpServers` (Claude Code's shape), `${VAR}` references expanded."""

    name: str
    transport: Literal["stdio", "http", "sse", "sdk"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def target(self) -> str:
        """What `/mcp` shows: the command line or the URL."""
        if self.transport == "sdk":
            return "in-process (SDK)"
        return " ".join((self.command, *self.args)) if self.transport == "stdio" else self.url


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """A server as `/mcp` shows it."""

    name: str
    transport: str
    target: str
    state: McpState
    error: str | None
    tools: tuple[McpToolSpec, ...]


def parse_server_config(name: str, raw: Any, environ: Mapping[str, str]) -> McpServerConfig:
    """Validate one `mcpServers` entry; ValueError says what is wrong with it."""
    if not isinstance(raw, Mapping):
        raise ValueError("expected an object with `command` (stdio) or `url` (http)")
    kind = raw.get("type") or ("stdio" if "command" in raw else "http" if "url" in raw else None)
    if kind == "streamable-http":
        kind = "http"
    if kind == "sdk":
        return McpServerConfig(name=name, transport="sdk")
    if kind not in ("stdio", "http", "sse"):
        raise ValueError(f"unknown type {kind!r}" if kind else "needs `command` (stdio) or `url` (http)")
    if kind == "stdio":
        command = raw.get("command")
        args = raw.get("args", [])
        if not isinstance(command, str) or not command:
            raise ValueError("`command` must be a non-empty string")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("`args` must be a list of strings")
        return McpServerConfig(
            name=name,
            transport="stdio",
            command=_expand(command, environ),
            args=tuple(_expand(a, environ) for a in args),
            env=_string_table(raw.get("env"), "env", environ),
        )
    url = raw.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError("`url` must be a non-empty string")
    return McpServerConfig(
        name=name,
        transport=kind,
        url=_expand(url, environ),
        headers=_string_table(raw.get("headers"), "headers", environ),
    )


def load_mcp_config(values: list[str]) -> dict[str, Any]:
    """`--mcp-config` values (files, or JSON strings) holding `{"mcpServers": {...}}`; later ones win."""
    servers: dict[str, Any] = {}
    for value in values:
        source = "--mcp-config" if value.lstrip().startswith("{") else value
        try:
            text = value if source == "--mcp-config" else Path(value).expanduser().read_text()
            data = json.loads(text)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{source}: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
            raise ValueError(f'{source}: expected an object with "mcpServers"')
        servers.update(data["mcpServers"])
    return servers


def timeouts_from_env(environ: Mapping[str, str]) -> tuple[float, float]:
    """(start, call) timeouts in seconds from `MCP_TIMEOUT` / `MCP_TOOL_TIMEOUT` (milliseconds)."""
    return (
        _seconds(environ.get(START_TIMEOUT_ENV), DEFAULT_START_TIMEOUT),
        _seconds(environ.get(CALL_TIMEOUT_ENV), DEFAULT_CALL_TIMEOUT),
    )


# One request on the server's session: `(session, progress callback or None) -> its result`.
Operation = Callable[[ClientSession, Any], Awaitable[Any]]


@dataclass(eq=False)
class _Call:
    # What the request is, in errors: the tool's name, "prompt review", "resource notes://a".
    label: str
    operation: Operation
    future: asyncio.Future[Any]
    on_progress: ProgressSink | None
    scope: anyio.CancelScope | None = None
    cancelled: bool = False

    def settle(self, result: Any = None, error: str | None = None) -> None:
        if self.future.done():
            return
        if error is None:
            self.future.set_result(result)
        else:
            self.future.set_exception(McpCallError(error))

    def cancel(self) -> None:
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()


class McpConnection:
    """One MCP server: its state, its tools, and the task that owns its ClientSession."""

    def __init__(self, name: str, config: McpServerConfig | None, *, cwd: Path, call_timeout: float,
                 sdk_relay: SdkRelay | None = None, client: McpClientSide | None = None) -> None:
        self.name = name
        self.sdk_relay = sdk_relay
        # Roots and elicitation, declared to the server only when the session provides them.
        self.client = client
        self.config = config
        self.cwd = cwd
        self.call_timeout = call_timeout
        self.state: McpState = "connecting"
        self.error: str | None = None
        self.specs: list[McpToolSpec] = []
        # What prompts/list and resources/list gave as the server connected (servers without the
        # capability: none); the resource tools list them afresh.
        self.prompts: list[McpPrompt] = []
        self.resources: list[McpResource] = []
        self.offers_resources = False
        self.instructions: str | None = None
        self._requests: asyncio.Queue[_Call | None] = asyncio.Queue()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: Any = None

    def status(self) -> McpServerStatus:
        config = self.config
        return McpServerStatus(
            name=self.name,
            transport=config.transport if config else "",
            target=config.target if config else "",
            state=self.state,
            error=self.error,
            tools=tuple(self.specs),
        )

    def start(self) -> None:
        if self.state == "connecting" and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._serve(), name=f"mcp:{self.name}")

    async def wait_ready(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            self.fail(f"did not start within {timeout:g}s")
            # The SDK's shutdown of a stuck process takes seconds; the session need not wait for it.
            if self._task is not None:
                self._task.cancel()

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], *, on_progress: ProgressSink | None = None
    ) -> types.CallToolResult:
        return await self.request(
            tool, lambda session, progress: session.call_tool(tool, arguments, progress_callback=progress),
            on_progress=on_progress,
        )

    async def request(self, label: str, operation: Operation, *, on_progress: ProgressSink | None = None) -> Any:
        """Run `operation` on the server's session (in its owner task) and return its result;
        McpCallError when the server is not there, fails, times out or answers with an error."""
        if self.state != "connected":
            raise McpCallError(self._unavailable())
        call = _Call(label, operation, asyncio.get_running_loop().create_future(), on_progress)
        self._requests.put_nowait(call)
        try:
            return await call.future
        except asyncio.CancelledError:
            call.cancel()
            raise

    async def aclose(self) -> None:
        task = self._task
        if task is None or task.done():
            if self.state in ("connecting", "connected"):
                self.state = "closed"
            return
        if self.state == "connected":
            self._requests.put_nowait(None)
        elif self.state == "connecting":
            task.cancel()
        # A failed server's task is already on its way out (lost connection, start timeout).
        await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
        await self._cancel()

    def fail(self, reason: str) -> None:
        """Record the first failure (later ones are its consequences)."""
        if self.state == "failed":
            return
        tail = self._stderr_tail()
        self.state = "failed"
        self.error = f"{reason} (stderr: {tail})" if tail else reason
        self._ready.set()

    # ------------------------------------------------------------ the owner task

    async def _serve(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._open_transport(stack)
                session = await stack.enter_async_context(
                    ClientSession(read, write, client_info=CLIENT_INFO, **self._client_callbacks()))
                initialized = await session.initialize()
                self.instructions = initialized.instructions
                self.specs = await _list_tools(session)
                await self._list_offers(session, initialized.capabilities)
                self.state = "connected"
                self._ready.set()
                async with anyio.create_task_group() as calls:
                    while (call := await self._requests.get()) is not None:
                        calls.start_soon(self._run_call, session, call)
                    calls.cancel_scope.cancel()
        except Exception as exc:
            self.fail(_describe(exc))
        finally:
            if self.state != "failed":
                self.state = "closed"
            self._ready.set()
            while not self._requests.empty():
                pending = self._requests.get_nowait()
                if pending is not None:
                    pending.settle(error=self._unavailable())
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None

    async def _list_offers(self, session: ClientSession, capabilities: types.ServerCapabilities) -> None:
        """The prompts and resources a server declares; one that fails to list them (or takes
        too long) still serves its tools."""
        self.offers_resources = capabilities.resources is not None
        for kind in ("prompts", "resources"):
            if getattr(capabilities, kind) is not None:
                with anyio.move_on_after(LIST_TIMEOUT), contextlib.suppress(Exception):
                    await self._relist(session, kind)

    async def _relist(self, session: ClientSession, kind: str) -> None:
        if kind == "prompts":
            self.prompts = await _list_prompts(session, self.name)
        else:
            self.resources = await _list_resources(session, self.name)

    def _listed_again(self, kind: str) -> None:
        """A server's prompts or resources changed: listed again in the owner task (a notification
        handler must not wait on the session)."""
        if self.state != "connected":
            return

        async def relist(session: ClientSession, _: Any) -> None:
            with contextlib.suppress(Exception):
                await self._relist(session, kind)

        call = _Call(f"{kind}/list", relist, asyncio.get_running_loop().create_future(), None)
        call.future.add_done_callback(lambda f: f.cancelled() or f.exception())  # nobody waits for it
        self._requests.put_nowait(call)

    def _client_callbacks(self) -> dict[str, Any]:
        """`roots` and `elicitation`, answered by the session (the capabilities follow from them)."""
        client = self.client
        if client is None:
            return {}

        async def list_roots(context: Any) -> types.ListRootsResult:
            roots = [types.Root(uri=path.as_uri(), name=path.name or str(path)) for path in client.roots()]
            return types.ListRootsResult(roots=roots)

        async def on_message(message: Any) -> None:
            if isinstance(message, types.PromptListChangedNotification):
                self._listed_again("prompts")
            elif isinstance(message, types.ResourceListChangedNotification):
                self._listed_again("resources")

        async def elicit(context: Any, params: Any) -> types.ElicitResult:
            schema = getattr(params, "requested_schema", None)
            request = ElicitationRequest(server=self.name, message=params.message, schema=dict(schema or {}),
                                         url=getattr(params, "url", None))
            answer = await client.elicit(request)
            content = answer.content if answer.action == "accept" and request.url is None else None
            return types.ElicitResult(action=answer.action, content=content)

        return {"list_roots_callback": list_roots, "elicitation_callback": elicit, "message_handler": on_message}

    async def notify_roots_changed(self) -> None:
        """`notifications/roots/list_changed` (the working directories changed); quietly nothing
        when the server is not connected."""
        if self.state != "connected" or self.client is None:
            return
        with contextlib.suppress(McpCallError):
            await self.request("roots/list_changed",
                               lambda session, _: session.send_notification(types.RootsListChangedNotification()))

    async def _open_transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        config = self.config
        assert config is not None
        if config.transport == "sdk":
            if self.sdk_relay is None:
                raise ValueError("an SDK server needs a program driving agent-tui through the Agent SDK")
            return await _sdk_streams(stack, self.name, self.sdk_relay)
        if config.transport == "stdio":
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                # Like Claude Code: the server sees our environment plus its own `env`.
                env={**os.environ, **config.env},
                cwd=self.cwd,
            )
            # Not the SDK's stdio_client: its reader is quadratic in a message's size (mcp_stdio.py).
            streams = stdio_transport(params, self._stderr)
        elif config.transport == "sse":
            streams = sse_client(config.url, headers=config.headers or None)
        else:
            client = await stack.enter_async_context(create_mcp_http_client(headers=config.headers or None))
            # The SDK's default (1 MiB an event) would take a large answer for a lost connection
            # and the server down with it; the tool caps what the model gets.
            streams = streamable_http_client(config.url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES)
        read, write = await stack.enter_async_context(streams)
        return read, write

    async def _run_call(self, session: ClientSession, call: _Call) -> None:
        label = f"MCP server {self.name!r}"
        try:
            if call.future.done():
                return
            with anyio.CancelScope() as scope:
                call.scope = scope
                if call.cancelled:
                    scope.cancel()
                progress = _progress_callback(call.on_progress) if call.on_progress else None
                try:
                    with anyio.fail_after(self.call_timeout):
                        result = await call.operation(session, progress)
                except TimeoutError:
                    call.settle(error=f"{label} did not answer {call.label} within {self.call_timeout:g}s; "
                                      "the call was cancelled.")
                except MCPError as exc:
                    if exc.code == types.CONNECTION_CLOSED:
                        self._lost("connection closed")
                        call.settle(error=f"{label} disconnected during {call.label}: {self.error}")
                    else:
                        call.settle(error=f"{label} returned an error for {call.label}: {exc.message} "
                                          f"(code {exc.code})")
                except Exception as exc:
                    call.settle(error=f"{label} failed during {call.label}: {_describe(exc)}")
                else:
                    call.settle(result)
        finally:
            call.settle(error=self._unavailable())

    def _lost(self, reason: str) -> None:
        if self.state == "connected":
            self.fail(reason)
            self._requests.put_nowait(None)

    async def _cancel(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _unavailable(self) -> str:
        if self.state == "failed":
            return f"MCP server {self.name!r} is not available: {self.error}"
        return f"MCP server {self.name!r} is {self.state}."

    def _stderr_tail(self) -> str:
        log = self._stderr
        if log is None:
            return ""
        try:
            fd = log.fileno()
            size = os.fstat(fd).st_size
            # pread leaves the offset the server writes at untouched.
            data = os.pread(fd, STDERR_TAIL_BYTES, max(0, size - STDERR_TAIL_BYTES))
        except (OSError, ValueError):
            return ""
        lines = data.decode("utf-8", "replace").strip().splitlines()
        return " | ".join(lines[-5:])


class McpManager:
    """Every configured server: started together, closed together, their tools for the model."""

    def __init__(
        self,
        servers: Mapping[str, Any],
        *,
        cwd: Path,
        start_timeout: float | None = None,
        call_timeout: float | None = None,
        environ: Mapping[str, str] | None = None,
        sdk_relay: SdkRelay | None = None,
        client: McpClientSide | None = None,
    ) -> None:
        environ = os.environ if environ is None else environ
        default_start, default_call = timeouts_from_env(environ)
        self.start_timeout = default_start if start_timeout is None else start_timeout
        self.call_timeout = default_call if call_timeout is None else call_timeout
        self._connections: list[McpConnection] = []
        for name, raw in servers.items():
            try:
                config = parse_server_config(name, raw, environ)
            except ValueError as exc:
                connection = McpConnection(name, None, cwd=cwd, call_timeout=self.call_timeout)
                connection.fail(f"invalid configuration: {exc}")
            else:
                connection = McpConnection(name, config, cwd=cwd, call_timeout=self.call_timeout,
                                           sdk_relay=sdk_relay, client=client)
            self._connections.append(connection)

    async def start(self) -> list[McpServerStatus]:
        """Connect every server concurrently; returns when each is connected, failed or timed out."""
        pending = [c for c in self._connections if c.state == "connecting"]
        for connection in pending:
            connection.start()
        await asyncio.gather(*(c.wait_ready(self.start_timeout) for c in pending))
        return self.servers()

    def servers(self) -> list[McpServerStatus]:
        return [c.status() for c in self._connections]

    def tools(self) -> list[McpTool]:
        """A tool per connected server's tool; the first of two that normalize to one name wins."""
        tools: dict[str, McpTool] = {}
        for connection in self._connections:
            if connection.state != "connected":
                continue
            for spec in connection.specs:
                tool = McpTool(connection.name, spec, connection)
                tools.setdefault(tool.name, tool)
        return list(tools.values())

    def instructions(self) -> str:
        """The servers' own instructions, for the system prompt."""
        parts = [
            f"## {c.name}\n{c.instructions.strip()}"
            for c in self._connections
            if c.state == "connected" and c.instructions and c.instructions.strip()
        ]
        return "# MCP Server Instructions\n\n" + "\n\n".join(parts) if parts else ""

    def prompts(self) -> list[McpPrompt]:
        """The connected servers' prompts (slash commands `/mcp__server__prompt`)."""
        return [p for c in self._connections if c.state == "connected" for p in c.prompts]

    async def get_prompt(self, prompt: McpPrompt, arguments: dict[str, str]) -> types.GetPromptResult:
        """prompts/get; McpCallError when the server fails or refuses it."""
        return await self._connected(prompt.server).request(
            f"prompt {prompt.name}", lambda session, _: session.get_prompt(prompt.name, arguments))

    def resource_servers(self) -> list[str]:
        return [c.name for c in self._connections if c.state == "connected" and c.offers_resources]

    def resources(self) -> list[McpResource]:
        """The resources listed as the servers connected (for `@server:uri` completion)."""
        return [r for c in self._connections if c.state == "connected" for r in c.resources]

    async def list_resources(self, server: str | None = None) -> list[McpResource]:
        """resources/list of every server offering resources, or of `server`; McpCallError for a
        server that is not there (or fails, when it is the one asked about)."""
        if server is not None:
            connection = self._connected(server)
            return await connection.request("resources/list", lambda session, _: _list_resources(session, server))
        listed = await asyncio.gather(
            *(self.list_resources(name) for name in self.resource_servers()), return_exceptions=True)
        return [r for result in listed if isinstance(result, list) for r in result]

    async def read_resource(self, server: str, uri: str) -> types.ReadResourceResult:
        """resources/read; McpCallError when the server is not there or cannot read it."""
        return await self._connected(server).request(f"resource {uri}", lambda session, _: session.read_resource(uri))

    async def roots_changed(self) -> None:
        """Tell every connected server its roots changed."""
        await asyncio.gather(*(c.notify_roots_changed() for c in self._connections))

    def _connected(self, server: str) -> McpConnection:
        connection = next((c for c in self._connections if c.name == server), None)
        if connection is None:
            names = ", ".join(c.name for c in self._connections) or "none"
            raise McpCallError(f"Server \"{server}\" not found. Available servers: {names}")
        if connection.state != "connected":
            raise McpCallError(connection._unavailable())
        return connection

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self._connections))


async def _sdk_streams(stack: contextlib.AsyncExitStack, name: str, relay: SdkRelay) -> tuple[Any, Any]:
    """A ClientSession's two streams, each message relayed to the SDK server and its answer read back."""
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](16)

    async def forward(message: dict[str, Any]) -> None:
        try:
            answer = await relay(name, message)
        except Exception as exc:
            answer = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": str(exc)}}
        await to_client.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(answer, by_name=False)))

    async def pump() -> None:
        async with anyio.create_task_group() as requests:
            async for session_message in from_client:
                message = session_message.message.model_dump(by_alias=True, mode="json", exclude_none=True)
                if "id" in message and "method" in message:
                    requests.start_soon(forward, message)
                elif "method" in message:  # a notification: the SDK acknowledges it, nobody waits
                    requests.start_soon(notify, message)

    async def notify(message: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):
            await relay(name, message)

    group = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(group.cancel_scope.cancel)
    group.start_soon(pump)
    for stream in (to_client, client_reads, client_writes, from_client):
        stack.push_async_callback(stream.aclose)
    return client_reads, client_writes


async def _list_tools(session: ClientSession) -> list[McpToolSpec]:
    specs: list[McpToolSpec] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        listing = await session.list_tools(params=params)
        for tool in listing.tools:
            annotations = tool.annotations.model_dump(exclude_none=True) if tool.annotations else {}
            specs.append(
                McpToolSpec(
                    name=tool.name,
                    description=tool.description or tool.title or "",
                    input_schema=dict(tool.input_schema or {}),
                    read_only=bool(tool.annotations and tool.annotations.read_only_hint),
                    annotations=annotations,
                )
            )
        cursor = listing.next_cursor
        if not cursor:
            return specs


async def _list_prompts(session: ClientSession, server: str) -> list[McpPrompt]:
    prompts: list[McpPrompt] = []
    cursor: str | None = None
    while True:
        listing = await session.list_prompts(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        for prompt in listing.prompts:
            arguments = tuple(McpPromptArgument(a.name, a.description or "", bool(a.required))
                              for a in prompt.arguments or [])
            prompts.append(McpPrompt(server, prompt.name, prompt.description or prompt.title or "", arguments))
        cursor = listing.next_cursor
        if not cursor:
            return prompts


async def _list_resources(session: ClientSession, server: str) -> list[McpResource]:
    resources: list[McpResource] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        listing = await session.list_resources(params=params)
        resources += [McpResource(server, str(r.uri), r.name, r.description or "", r.mime_type)
                      for r in listing.resources]
        cursor = listing.next_cursor
        if not cursor:
            return resources


def _progress_callback(sink: ProgressSink) -> Any:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        sink(message or (f"{progress:g}/{total:g}" if total else f"{progress:g}"))

    return on_progress


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
        return "connection closed"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(value: str, environ: Mapping[str, str]) -> str:
    """`${VAR}` and `${VAR:-default}`, as Claude Code expands them in MCP configs."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ValueError(f"environment variable {name} is not set")

    return _VAR.sub(replace, value)


def _string_table(raw: Any, key: str, environ: Mapping[str, str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ValueError(f"`{key}` must map strings to strings")
    return {k: _expand(v, environ) for k, v in raw.items()}


def _seconds(milliseconds: str | None, default: float) -> float:
    try:
        value = float(milliseconds) / 1000 if milliseconds else default
    except ValueError:
        return default
    return value if value > 0 else default
