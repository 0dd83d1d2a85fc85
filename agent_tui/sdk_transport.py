"""The Agent SDK transport: `--input-format stream-json`, the protocol Claude's Agent SDK speaks.

stdin carries one JSON object a line: `user` messages (a prompt each; the session lives across
them, one `result` per prompt) and the control protocol: `control_request`s from the program
(`initialize`, `interrupt`, `set_permission_mode`, `set_model`, `mcp_status`,
`get_context_usage`, `rewind_files`) answered with a `control_response`, and the `control_response`s to
agent-tui's own requests (`can_use_tool` for a permission, `hook_callback` for the program's
hooks, `mcp_message` for its in-process MCP servers).  stdout carries Claude Code's stream-json
messages (claude_stream.py), the control messages and `session_state_changed` frames.

Bad input (not JSON, an unknown type, an unsupported request) gets a `control_response` error or a
line on stderr, and the session goes on; stdin closing ends the session once the prompts already
received are answered.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from .claude_stream import ApiClock, ClaudeCodeStream
from .engine import PermissionAnswer, Session
from .engine import events as ev
from .printer import result_object
from .stdin_lines import LineTooLong, StdinLines
from .tools.agent import BUILT_IN_AGENTS, AgentDefinition

# The Claude Code release whose stream-json and control protocol this speaks (the SDK checks it).
PROTOCOL_VERSION = "2.1.0"
# The SDK asks for `session_state_changed` frames with the first variable; the person with the second.
_READS_STATE_ENV = "CLAUDE_CODE_SDK_READS_SESSION_STATE"
_EMIT_STATE_ENV = "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS"
# One stdin line may carry a whole image.

Handler = Callable[["SdkTransport", dict[str, Any]], Awaitable[dict[str, Any]]]


class ControlError(Exception):
    """A control request that cannot be done; its text goes back in the error response."""


class SdkTransport:
    """One session driven over stdin/stdout by a program (Claude's Agent SDK, or anything speaking it)."""

    def __init__(self, session: Session, out: TextIO, *, permission_prompt: bool, include_partial: bool = False,
                 err: TextIO | None = None, default_model: str | None = None,
                 max_budget_usd: float | None = None, replay_user_messages: bool = False) -> None:
        self.session = session
        self._max_budget_usd = max_budget_usd
        self._out = out
        self._err = err or sys.stderr
        self._permission_prompt = permission_prompt
        self._default_model = default_model or session.model.name
        # Each prompt with its uuid (the program's own, or a new one).
        self._prompts: asyncio.Queue[tuple[str | list[dict[str, Any]], str] | None] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._line = 0
        self._api = ApiClock()
        self._state_frames = bool(os.environ.get(_READS_STATE_ENV) or os.environ.get(_EMIT_STATE_ENV))
        self._host_only = not os.environ.get(_EMIT_STATE_ENV)
        session.add_listener(ClaudeCodeStream(session, self.send, include_partial=include_partial,
                                              version=PROTOCOL_VERSION, replay_user_messages=replay_user_messages))
        session.add_listener(self._api)
        session.add_listener(self._on_event)
        session.set_sdk_mcp_relay(self._mcp_relay)

    # ------------------------------------------------------------ the run

    async def run(self, lines: StdinLines, first_prompt: str | None = None) -> int:
        """Serve until stdin closes and every prompt received is answered; the exit status."""
        if first_prompt:
            self._prompts.put_nowait((first_prompt, str(uuid.uuid4())))
        turns = asyncio.ensure_future(self._turns())
        try:
            while (line := await _next_line(lines)) is not None:
                self._line += 1
                if line.strip():
                    self._take(line)
                if turns.done():
                    break
        finally:
            self._close_input()
        await turns
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return 0

    def send(self, message: dict[str, Any]) -> None:
        self._out.write(json.dumps(message, ensure_ascii=False) + "\n")
        self._out.flush()

    def _problem(self, text: str) -> None:
        print(f"agent-tui: stdin line {self._line}: {text}", file=self._err, flush=True)

    def _close_input(self) -> None:
        """stdin is gone: nothing can answer agent-tui's requests any more."""
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ControlError("stdin closed before the program answered"))
        self._prompts.put_nowait(None)

    async def _turns(self) -> None:
        while (entry := await self._prompts.get()) is not None:
            prompt, prompt_id = entry
            cost = self.session.cost_usd
            if self._max_budget_usd is not None and cost is not None and cost >= self._max_budget_usd:
                self.send(self._over_budget(cost))
                continue
            self._state("running")
            started, api_before = time.monotonic(), self._api.ms
            try:  # `/mcp__server__prompt args`: the server's prompt is what is sent
                if isinstance(prompt, str):
                    prompt = await self.session.expand_mcp_prompt(prompt) or prompt
            except ValueError as exc:
                self.send(self._not_sent(str(exc)))
                continue
            terminal = await self.session.submit(prompt, prompt_id=prompt_id)
            duration = int((time.monotonic() - started) * 1000)
            self.send(result_object(self.session, terminal, duration, self._api.ms - api_before))
            if self._prompts.empty():
                self._state("idle")

    def _over_budget(self, cost: float) -> dict[str, Any]:
        """The result of a prompt not run: `--max-budget-usd` is spent."""
        message = f"Reached the maximum budget (${self._max_budget_usd:g}; spent ${cost:.4f})"
        return self._not_sent(message, "error_max_budget_usd", cost)

    def _not_sent(self, message: str, subtype: str = "error_during_execution",
                  cost: float | None = None) -> dict[str, Any]:
        """The result of a prompt never sent to the model (the budget is spent, its command failed)."""
        return {"type": "result", "subtype": subtype, "is_error": True, "result": message,
                "errors": [message], "num_turns": 0, "duration_ms": 0, "duration_api_ms": 0, "stop_reason": None,
                "total_cost_usd": cost if cost is not None else self.session.cost_usd or 0.0,
                "session_id": self.session.session_id, "uuid": str(uuid.uuid4()),
                "usage": {"input_tokens": 0, "output_tokens": 0}, "permission_denials": []}

    def _state(self, state: str) -> None:
        if not self._state_frames:
            return
        frame = {"type": "system", "subtype": "session_state_changed", "state": state,
                 "session_id": self.session.session_id, "uuid": str(uuid.uuid4())}
        if self._host_only:
            frame["sdk_host_only"] = True
        self.send(frame)

    # ------------------------------------------------------------ stdin

    def _take(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._problem(f"not JSON, ignored: {line.strip()[:80]!r}")
            return
        if not isinstance(message, dict):
            self._problem("expected a JSON object, ignored")
            return
        kind = message.get("type")
        if kind == "user":
            prompt = _prompt_of(message)
            if prompt is None:
                self._problem("a user message needs message.content (a string or content blocks), ignored")
            else:
                given = message.get("uuid")
                self._prompts.put_nowait((prompt, given if isinstance(given, str) and given else str(uuid.uuid4())))
        elif kind == "control_request":
            self._spawn(self._answer(message))
        elif kind == "control_response":
            self._resolve(message)
        elif kind in ("control_cancel_request", "keep_alive"):
            return  # agent-tui answers every request at once; nothing to cancel
        else:
            self._problem(f"unknown message type {kind!r}, ignored (expected user or control_request)")

    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, message: dict[str, Any]) -> None:
        request_id = message.get("request_id")
        request = message.get("request")
        if not isinstance(request_id, str) or not isinstance(request, dict):
            self._problem("a control_request needs request_id and a request object, ignored")
            return
        subtype = request.get("subtype")
        handler = _HANDLERS.get(subtype) if isinstance(subtype, str) else None
        try:
            if handler is None:
                raise ControlError(f"Unsupported control request subtype: {subtype}")
            response = await handler(self, request)
        except Exception as exc:  # every failure is the program's to hear, not a crash
            self.send({"type": "control_response",
                       "response": {"subtype": "error", "request_id": request_id, "error": str(exc)}})
            return
        self.send({"type": "control_response",
                   "response": {"subtype": "success", "request_id": request_id, "response": response}})

    def _resolve(self, message: dict[str, Any]) -> None:
        response = message.get("response")
        request_id = response.get("request_id") if isinstance(response, dict) else None
        future = self._pending.get(request_id) if isinstance(request_id, str) else None
        if future is None or future.done():
            self._problem(f"a control_response to no pending request ({request_id!r}), ignored")
            return
        assert isinstance(response, dict)
        if response.get("subtype") == "error":
            future.set_exception(ControlError(str(response.get("error") or "the program answered with an error")))
        else:
            answer = response.get("response")
            future.set_result(answer if isinstance(answer, dict) else {})

    # ------------------------------------------------------------ agent-tui's requests

    async def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """Ask the program (can_use_tool, hook_callback, mcp_message) and wait for its answer."""
        if self._closed:
            raise ControlError("stdin is closed: the program cannot answer")
        request_id = f"agent_tui_{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self.send({"type": "control_request", "request_id": request_id, "request": body})
        try:
            return await future
        finally:
            self._pending.pop(request_id, None)

    def _on_event(self, event: ev.Event) -> None:
        if type(event) is ev.PermissionRequested and event.future is not None:
            if self._permission_prompt:
                self._spawn(self._can_use_tool(event))

    async def _can_use_tool(self, event: ev.PermissionRequested) -> None:
        body: dict[str, Any] = {
            "subtype": "can_use_tool",
            "tool_name": event.tool_name,
            "input": event.input,
            "permission_suggestions": _suggestions(event.suggested_rule),
            "blocked_path": None,
            "tool_use_id": event.tool_use_id,
            "decision_reason": event.message,
        }
        if event.parent_tool_use_id:
            body["agent_id"] = event.parent_tool_use_id
        self._state("requires_action")
        interrupt = False
        try:
            reply = await self.request(body)
        except ControlError as exc:
            answer = PermissionAnswer("deny", message=f"Permission to use {event.tool_name} was not granted: {exc}")
        else:
            if reply.get("behavior") == "allow":
                self._apply_updates(reply.get("updatedPermissions"))
                updated = reply.get("updatedInput")
                answer = PermissionAnswer("allow", updated_input=updated if isinstance(updated, dict) else None)
            else:
                message = reply.get("message")
                answer = PermissionAnswer(
                    "deny", message=message if isinstance(message, str) and message else
                    f"Permission to use {event.tool_name} was denied by the program driving agent-tui.")
                interrupt = bool(reply.get("interrupt"))
        future = event.future
        if future is not None and not future.done():
            future.set_result(answer)
        if interrupt:
            self.session.interrupt()
        if not self._closed:
            self._state("running")

    def _apply_updates(self, updates: Any) -> None:
        """`updatedPermissions` of an allow: rules and a mode for this session, directories to work in."""
        for update in updates if isinstance(updates, list) else []:
            kind = update.get("type") if isinstance(update, dict) else None
            try:
                if kind == "addRules":
                    behavior = update.get("behavior", "allow")
                    for rule in update.get("rules") or []:
                        content = rule.get("ruleContent")
                        text = rule["toolName"] + (f"({content})" if content else "")
                        self.session.add_permission_rule(text, behavior)
                elif kind == "setMode":
                    self.session.set_permission_mode(update["mode"])
                elif kind == "addDirectories":
                    for directory in update.get("directories") or []:
                        self.session.add_directory(directory)
                else:
                    print(f"agent-tui: permission update {kind!r} is not supported, ignored", file=self._err)
            except (KeyError, TypeError, ValueError) as exc:
                print(f"agent-tui: permission update {kind!r} ignored: {exc}", file=self._err)

    async def _mcp_relay(self, server: str, message: dict[str, Any]) -> dict[str, Any]:
        reply = await self.request({"subtype": "mcp_message", "server_name": server, "message": message})
        answer = reply.get("mcp_response")
        if not isinstance(answer, dict):
            raise ControlError(f"the program sent no mcp_response for {message.get('method')}")
        return answer

    def _hook_callback(self, callback_id: str) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
        async def call(payload: dict[str, Any]) -> dict[str, Any]:
            return await self.request({"subtype": "hook_callback", "callback_id": callback_id, "input": payload,
                                       "tool_use_id": payload.get("tool_use_id")})

        return call

    # ------------------------------------------------------------ the program's requests

    async def _initialize(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        for event, matchers in (request.get("hooks") or {}).items():
            for matcher in matchers or []:
                timeout = matcher.get("timeout")
                for callback_id in matcher.get("hookCallbackIds") or []:
                    try:
                        session.add_hook_callback(event, matcher.get("matcher"), f"SDK hook {callback_id}",
                                                  self._hook_callback(callback_id), timeout=timeout)
                    except ValueError as exc:
                        print(f"agent-tui: hook {callback_id} not registered: {exc}", file=self._err)
        for name, agent in (request.get("agents") or {}).items():
            tools = agent.get("tools")
            session.define_agent(AgentDefinition(
                name=name, description=agent.get("description", ""), system_prompt=agent.get("prompt", ""),
                tools=tuple(tools) if isinstance(tools, list) else None, model=agent.get("model")))
        skills = request.get("skills")
        if isinstance(skills, list):
            unknown = session.limit_skills(str(name) for name in skills)
            if unknown:
                print(f"agent-tui: initialize: no skill named {', '.join(unknown)}", file=self._err)
        for option in ("systemPromptSnapshot", "excludeDynamicSections"):
            if request.get(option) is not None:
                print(f"agent-tui: initialize: {option} is not supported, ignored", file=self._err)
        agents = {**BUILT_IN_AGENTS, **session.agent_types}
        models = [self._default_model, session.model.name]
        await session.start_mcp()  # their prompts are commands too
        return {
            "commands": [{"name": c.name, "description": c.description, "argumentHint": c.argument_hint}
                         for c in session.custom_commands.values()]
                        + [{"name": p.command, "description": p.description, "argumentHint": p.argument_hint}
                           for p in session.mcp_prompts()],
            "agents": [{"name": a.name, "description": a.description, "model": a.model} for a in agents.values()],
            "models": [{"value": m, "displayName": m, "description": ""} for m in dict.fromkeys(models)],
            "output_style": "default",
            "available_output_styles": ["default"],
            "permissionMode": session.permission_mode,
            "capabilities": {"interrupt": True, "setPermissionMode": True, "setModel": True, "mcpStatus": True,
                             "getContextUsage": True,
                             "rewindFiles": session.checkpoints is not None,
                             "canUseTool": self._permission_prompt, "hookCallbacks": True,
                             "sdkMcpServers": True},
            # A callback that fails does not block: its failure is reported like a hook's exit 1.
            "hook_on_failure_supported": False,
            "pid": os.getpid(),
        }

    async def _interrupt(self, request: dict[str, Any]) -> dict[str, Any]:
        self.session.interrupt()
        return {}

    async def _set_permission_mode(self, request: dict[str, Any]) -> dict[str, Any]:
        self.session.set_permission_mode(request["mode"])
        return {}

    async def _set_model(self, request: dict[str, Any]) -> dict[str, Any]:
        self.session.set_model(request.get("model") or self._default_model)
        return {}

    async def _mcp_status(self, request: dict[str, Any]) -> dict[str, Any]:
        statuses = await self.session.start_mcp()
        servers = []
        for status in statuses:
            entry: dict[str, Any] = {"name": status.name, "status": status.state,
                                     "tools": [{"name": t.name, "description": t.description} for t in status.tools]}
            if status.error:
                entry["error"] = status.error
            servers.append(entry)
        return {"mcpServers": servers}

    async def _context_usage(self, request: dict[str, Any]) -> dict[str, Any]:
        breakdown = await self.session.context_breakdown(exact=False)
        return {
            "categories": [{"name": name, "tokens": tokens, "color": ""} for name, tokens in breakdown.rows()],
            "totalTokens": breakdown.total,
            "maxTokens": breakdown.auto_compact_threshold,
            "rawMaxTokens": breakdown.window,
            "percentage": round(100 * breakdown.total / breakdown.window, 1) if breakdown.window else 0.0,
            "model": breakdown.model,
        }

    async def _rewind_files(self, request: dict[str, Any]) -> dict[str, Any]:
        """The files as they were just before the prompt `user_message_id` (the conversation stays);
        `dry_run`: only what would change."""
        checkpoints = self.session.checkpoints
        if checkpoints is None:
            raise ControlError("File rewinding is not enabled.")
        target = request.get("user_message_id")
        checkpoint = checkpoints.find(target) if isinstance(target, str) else None
        if checkpoint is None:
            raise ControlError("No file checkpoint found for this message.")
        if request.get("dry_run"):
            files, insertions, deletions = await asyncio.to_thread(checkpoints.diff_stats, checkpoint)
            return {"canRewind": True, "filesChanged": files, "insertions": insertions, "deletions": deletions}
        if self.session.running:
            raise ControlError("Failed to rewind: a prompt is running (interrupt it first)")
        files = await asyncio.to_thread(checkpoints.restore_files, checkpoint)
        return {"canRewind": True, "filesChanged": files}


_HANDLERS: dict[str, Handler] = {
    "initialize": SdkTransport._initialize,
    "interrupt": SdkTransport._interrupt,
    "set_permission_mode": SdkTransport._set_permission_mode,
    "set_model": SdkTransport._set_model,
    "mcp_status": SdkTransport._mcp_status,
    "get_context_usage": SdkTransport._context_usage,
    "rewind_files": SdkTransport._rewind_files,
}


async def _next_line(lines: StdinLines) -> str | None:
    """stdin's next line as text; None at its end.  A line over the size limit is dropped."""
    try:
        data = await lines.readline()
    except LineTooLong:
        print("agent-tui: a stdin line over the size limit was dropped", file=sys.stderr, flush=True)
        return ""
    return None if data is None else data.decode("utf-8", "replace")


def _prompt_of(message: dict[str, Any]) -> str | list[dict[str, Any]] | None:
    inner = message.get("message")
    content = inner.get("content") if isinstance(inner, dict) else None
    if isinstance(content, str) and content.strip():
        return content
    if isinstance(content, list) and content and all(isinstance(b, dict) for b in content):
        return content
    return None


def _suggestions(rule: str | None) -> list[dict[str, Any]] | None:
    """The rule the prompt would offer for `a`, in Claude Code's permission-update shape."""
    if not rule:
        return None
    name, _, rest = rule.partition("(")
    entry: dict[str, Any] = {"toolName": name}
    if rest.endswith(")"):
        entry["ruleContent"] = rest[:-1]
    return [{"type": "addRules", "rules": [entry], "behavior": "allow", "destination": "session"}]
