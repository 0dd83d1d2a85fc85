"""`AnthropicModel`: the Messages API over httpx2 (models/transport.py), streaming, and the request body."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .base import DEFAULT_MODEL, ModelClient, ModelError

if TYPE_CHECKING:  # the request and stream types load with the first request, not the first frame
    from .body import Body
    from .stream import ModelRequest, StreamEvent
    from .transport import MessagesTransport


def _env_timeout() -> float:
    try:
        return float(os.environ["API_TIMEOUT_MS"]) / 1000.0
    except (KeyError, ValueError):
        return 600.0


class AnthropicModel(ModelClient):
    """Streams from the Messages API (engine/models/transport.py: httpx2 and the SSE decoder).

    There are no client-side retries: the loop retries, so that every retry is
    visible to the user and counted for model fallback.  `timeout` (default:
    `API_TIMEOUT_MS`, else 600 s) is also the read-stall limit: a stream that
    sends nothing for that long fails as a retryable timeout.  The anthropic
    SDK is imported only for what it adds beyond a request: `count_tokens`
    and `list_models`.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
    ) -> None:
        if timeout is None:
            timeout = _env_timeout()
        self.name = model
        self.label = model
        api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        auth_token = auth_token if auth_token is not None else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if not api_key and not auth_token:
            # Local servers speaking the Messages API usually need no key.
            api_key = "no-key"
        self.base_url = base_url
        self._api_key = api_key or None
        self._auth_token = auth_token or None
        self._timeout = timeout
        self._transport_instance: MessagesTransport | None = None
        # The SDK client for count_tokens / list_models, made on first use.
        self._sdk: Any = None
        # False once the server answered count_tokens with "not found" (many local servers).
        self._has_count_tokens = True
        # False once the server rejected a cache_control field (some local servers do).
        self.prompt_caching_supported = True

    @property
    def _transport(self) -> MessagesTransport:
        # httpx2 and its TLS context load with the first request, not before the first paint.
        if self._transport_instance is None:
            from .transport import MessagesTransport

            self._transport_instance = MessagesTransport(
                api_key=self._api_key, auth_token=self._auth_token, base_url=self.base_url, timeout=self._timeout
            )
        return self._transport_instance

    def prepare(self) -> None:
        from .transport import tls_context

        tls_context()

    def _sdk_client(self) -> Any:
        if self._sdk is None:
            from anthropic import AsyncAnthropic

            self._sdk = AsyncAnthropic(
                api_key=self._api_key,
                auth_token=self._auth_token,
                base_url=self.base_url,
                max_retries=0,
                timeout=self._timeout,
            )
        return self._sdk

    async def count_tokens(self, request: ModelRequest) -> int | None:
        """The exact input tokens of `request` from the count-tokens endpoint, or
        None when the server does not offer it or the count fails."""
        if not self._has_count_tokens or not request.messages:
            return None
        import anthropic

        kwargs: dict[str, Any] = {"model": request.model, "messages": request.messages}
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = request.tools
        try:
            result = await self._sdk_client().messages.count_tokens(**kwargs)
        except anthropic.NotFoundError:
            self._has_count_tokens = False
            return None
        except anthropic.APIError:
            return None
        return int(result.input_tokens)

    async def list_models(self) -> list[str]:
        """The model ids the server offers (newest first, as the API lists them); [] when it cannot say."""
        import anthropic

        try:
            return [m.id async for m in self._sdk_client().models.list(limit=100)]
        except anthropic.APIError:
            return []

    async def aclose(self) -> None:
        """Close the HTTP connection pools, on the loop that used them.

        Without this, a garbage-collected client is closed on whatever loop
        happens to be running then, which fails when that is another loop."""
        if self._transport_instance is not None:
            await self._transport_instance.aclose()
        if self._sdk is not None:
            await self._sdk.close()

    def request_body(self, request: ModelRequest, *, caching: bool | None = None) -> dict[str, Any]:
        """The JSON body of a streaming `POST /v1/messages` for `request`."""
        if caching is None:
            caching = request.prompt_caching and self.prompt_caching_supported
        return request_body(request, caching=caching)

    def encode(self, request: ModelRequest, *, caching: bool | None = None) -> Body:
        """`request_body` as the bytes sent: each message's JSON made once across requests
        (engine/models/body.py).  Called in a worker thread."""
        from .body import join_body, pieces

        body = self.request_body(request, caching=caching)
        memo = request.memo.encoded("anthropic") if request.memo is not None else None
        return join_body(body, "messages", pieces(body["messages"], memo), memo)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        from .thinking import request_thinking

        caching = request.prompt_caching and self.prompt_caching_supported
        betas = request_thinking(request).betas
        try:
            async for event in self._stream_body(await self._encoded(request, caching), betas):
                yield event
            return
        except ModelError as err:
            if not (caching and _rejects_cache_control(err)):
                raise
        # A server that does not know cache_control: say so once, and never send it again.
        from .stream import StreamNotice

        self.prompt_caching_supported = False
        yield StreamNotice(
            "The server rejected prompt caching (cache_control); continuing without it. "
            "Set promptCaching to false in settings to skip this."
        )
        async for event in self._stream_body(await self._encoded(request, False), betas):
            yield event

    async def _encoded(self, request: ModelRequest, caching: bool) -> Body:
        import asyncio

        # Proportional to the history: never on the event loop's thread (the TUI draws there).
        return await asyncio.to_thread(self.encode, request, caching=caching)

    async def _stream_body(self, body: Body, betas: tuple[str, ...]) -> AsyncIterator[StreamEvent]:
        import contextlib
        import json

        import httpx2

        from .sse import drain
        from .stream import StreamAccumulator
        from .transport import stream_error, transport_error

        acc = StreamAccumulator()
        try:
            async with contextlib.aclosing(self._transport.events(body, betas=list(betas))) as events:
                async for name, data in events:
                    if name == "ping":
                        continue
                    if name == "error":
                        raise stream_error(data, acc.started)
                    if not data:
                        continue
                    raw = json.loads(data)
                    if isinstance(raw, dict) and raw.get("type") == "error":
                        raise stream_error(data, acc.started)  # a data-only error event
                    event = acc.feed(raw)
                    if event is not None:
                        yield event
                    if acc.stopped:
                        # message_stop ends the response, whether or not the server ends the stream.
                        await drain(events)
                        break
            if not acc.stopped:
                raise ModelError("connection", "The stream ended before message_stop", mid_stream=acc.started)
        except httpx2.TransportError as exc:
            raise transport_error(exc, self._transport.url, acc.started) from exc
        except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested deeper than the decoder goes
            raise ModelError("api_error", f"Malformed stream event: {exc}", mid_stream=acc.started) from exc


def request_body(request: ModelRequest, *, caching: bool) -> dict[str, Any]:
    """The JSON body of a streaming Messages-API request (cache markers when `caching`)."""
    from .caching import cached_messages, cached_system, cached_tools, system_text
    from .thinking import request_thinking

    body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
    if request.system:
        body["system"] = cached_system(request.system) if caching else system_text(request.system)
    body["messages"] = cached_messages(request.messages) if caching else request.messages
    if request.tools:
        body["tools"] = cached_tools(request.tools) if caching else request.tools
    thinking = request_thinking(request)
    if thinking.thinking:
        body["thinking"] = thinking.thinking
    if thinking.effort:
        body["output_config"] = {"effort": thinking.effort}
    body["stream"] = True
    return body


def _rejects_cache_control(err: ModelError) -> bool:
    return err.kind == "invalid_request" and not err.mid_stream and "cache_control" in err.message
