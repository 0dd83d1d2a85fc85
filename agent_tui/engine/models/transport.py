"""The Messages-API transport: `POST /v1/messages` over httpx2, SSE decoded here.

The anthropic SDK builds pydantic types for every request and event, and
importing it costs seconds of CPU before the first paint; streaming needs
none of that.  This module sends the request the SDK would send (its auth
and version headers) with httpx2, the SDK's own HTTP library, and turns
HTTP failures into classified `ModelError`s.  Retrying is the loop's job
(engine/loop/query.py), so that every retry is visible and counted.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx2

from ... import __version__
from .base import ModelError
from .body import Body
from .sse import iter_sse

if TYPE_CHECKING:
    import ssl

DEFAULT_BASE_URL = "https://api.anthropic.com"
# The version header of the anthropic SDK release this project is built against.
ANTHROPIC_VERSION = "2026-10-21"
# The SDK's connect timeout: an unreachable host fails in seconds, not after the read timeout.
CONNECT_TIMEOUT = 5.0

_PROMPT_TOO_LONG = re.compile(r"prompt is too long", re.IGNORECASE)
_KINDS_BY_TYPE = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "api_error": "server",
    "timeout_error": "timeout",
    "authentication_error": "auth",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "request_too_large": "prompt_too_long",
}


def auth_headers(api_key: str | None, auth_token: str | None) -> dict[str, str]:
    """As the anthropic SDK 2.x sends them: both credentials as a bearer token, the key winning."""
    credential = api_key or auth_token
    return {"Authorization": f"Bearer {credential}"} if credential else {}


def messages_url(base_url: str | None) -> str:
    return (base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/messages"


def retry_after(headers: Any) -> float | None:
    """`retry-after-ms` (preferred) or `retry-after` in seconds; None when absent or not a number."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return float(ms) / 1000.0
        value = headers.get("retry-after")
        if value is not None:
            return float(value)
    except (TypeError, ValueError):
        return None
    return None


def should_retry(headers: Any) -> bool | None:
    """The server's `x-should-retry` verdict, which overrides the status code's."""
    value = (headers.get("x-should-retry") or "").strip().lower()
    return True if value == "true" else False if value == "false" else None


def classify(status: int | None, error_type: str | None, message: str) -> str:
    """A `ModelError.kind` from an HTTP status and/or the API's `error.type`."""
    if error_type == "overloaded_error" or status == 529:
        return "overloaded"
    if error_type == "rate_limit_error" or status == 429:
        return "rate_limit"
    if status == 413 or error_type == "request_too_large":
        return "prompt_too_long"
    if error_type == "invalid_request_error" and _PROMPT_TOO_LONG.search(message):
        return "prompt_too_long"
    if error_type == "authentication_error" or status == 401:
        return "auth"
    if error_type == "permission_error" or status == 403:
        return "permission"
    if error_type == "not_found_error" or status == 404:
        return "not_found"
    if error_type == "invalid_request_error" or status == 400:
        return "invalid_request"
    if error_type == "timeout_error" or status == 408:
        return "timeout"
    if error_type == "api_error" or (status is not None and status >= 500):
        return "server"
    return "api_error"


def _error_fields(body: bytes | str) -> tuple[str | None, str | None]:
    try:
        parsed = json.loads(body)
    except ValueError:
        return None, None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        return None, None
    message = error.get("message")
    return error.get("type"), message if isinstance(message, str) else None


def status_error(status: int, headers: Any, body: bytes, reason: str = "") -> ModelError:
    """An HTTP error response (status >= 400) as a `ModelError`."""
    error_type, message = _error_fields(body)
    if message is None:
        message = _one_line_reason(body, reason, status)
    return ModelError(
        classify(status, error_type, message),
        message,
        status=status,
        retry_after=retry_after(headers),
        should_retry=should_retry(headers),
    )


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _one_line_reason(body: bytes, reason: str, status: int) -> str:
    """A body that is not the API's error object, in one line: a proxy's HTML page by its
    title (or the status's reason phrase), plain text by its first line."""
    text = body.strip()
    if text.startswith(b"<"):
        title = _TITLE.search(text)
        found = " ".join(title.group(1).decode("utf-8", "replace").split()) if title else ""
        return found or reason or f"HTTP {status}"
    first = text.decode("utf-8", "replace").split("\n", 1)[0].strip()
    return first[:200] or reason or f"HTTP {status}"


def stream_error(data: str, started: bool) -> ModelError:
    """An SSE `error` event after HTTP 200, classified by its `error.type`."""
    error_type, message = _error_fields(data)
    message = message or data or "stream error"
    return ModelError(classify(None, error_type, message), message, status=200, mid_stream=started)


def json_error(body: bytes) -> ModelError:
    """A JSON body where a stream was due: the error it holds, classified by its type."""
    error_type, message = _error_fields(body)
    if message is None:
        return ModelError("api_error", "The server answered with JSON instead of a stream", status=200)
    return ModelError(classify(None, error_type, message), message, status=200)


def transport_error(exc: httpx2.TransportError, url: str, started: bool) -> ModelError:
    """A failure below HTTP: say what failed and where, in the words a person would use."""
    where = _host_port(url)
    if isinstance(exc, httpx2.TimeoutException):
        if isinstance(exc, httpx2.ConnectTimeout):
            return ModelError("timeout", f"Connection timed out ({where})", mid_stream=started)
        return ModelError("timeout", f"The response stalled: {type(exc).__name__}", mid_stream=started)
    if isinstance(exc, httpx2.ConnectError):
        if _caused_by(exc, ConnectionRefusedError):
            return ModelError("connection", f"Connection refused ({where})", mid_stream=started)
        return ModelError("connection", f"Cannot connect ({where}): {exc}", mid_stream=started)
    return ModelError("connection", f"Connection lost: {type(exc).__name__}: {exc}", mid_stream=started)


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


_tls_lock = threading.Lock()
_tls: ssl.SSLContext | None = None


def tls_context() -> ssl.SSLContext:
    """httpx2's default verifying context (its CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR), made once.

    Loading the CA bundle is a tenth of a second of CPU: the app makes it in a thread
    while the first frame is up (`AnthropicModel.prepare`), so the first request does
    not stall the screen for it.  One context serves every client (contexts are shareable)."""
    global _tls
    with _tls_lock:
        if _tls is None:
            _tls = httpx2.create_ssl_context()
        return _tls


class MessagesTransport:
    """One pooled HTTP client for `POST /v1/messages` with the SDK's headers."""

    def __init__(
        self, *, api_key: str | None, auth_token: str | None, base_url: str | None, timeout: float
    ) -> None:
        self.url = messages_url(base_url)
        self.headers = {
            "Accept": "application/json",
            "Content-Type": "application/json",
            "User-Agent": f"agent-tui/{__version__}",
            "anthropic-version": ANTHROPIC_VERSION,
            **auth_headers(api_key, auth_token),
        }
        # `timeout` is also the read-stall limit: a stream silent that long fails as a timeout.
        self._client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            follow_redirects=False,
            verify=tls_context(),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def events(
        self, body: Body | dict[str, Any], *, betas: list[str] | None = None
    ) -> AsyncIterator[tuple[str | None, str]]:
        """Send `body` (a streaming request, or its encoding: models/body.py) and yield its SSE events.

        An HTTP error status raises `ModelError`; transport failures raise httpx2's
        `TransportError` (the caller knows whether the stream had begun: `transport_error`).
        Closing the iterator early closes the connection."""
        headers = self.headers
        if betas:
            headers = {**headers, "anthropic-beta": ",".join(betas)}
        if isinstance(body, dict):
            body = Body([json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()])
        headers = {**headers, **body.headers()}
        async with self._client.stream("POST", self.url, content=body.content(), headers=headers) as response:
            if response.status_code >= 400:
                raw = await response.aread()
                raise status_error(response.status_code, response.headers, raw, response.reason_phrase)
            if response.headers.get("content-type", "").startswith("application/json"):
                # A 200 that is not a stream: an error object some proxies send with a 200.
                raise json_error(await response.aread())
            async for event in iter_sse(response.aiter_bytes()):
                yield event
