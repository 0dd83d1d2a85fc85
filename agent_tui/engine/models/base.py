"""What every model client shares: the `ModelClient` base class, errors, and what is
known of each model (context window and output cap from engine/models/facts.py, generation).

A client turns one `ModelRequest` into a stream of `StreamEvent`s (both in
`stream.py`, which the first frame does not load).  The loop only sees these
events and `ModelError`, whatever the server: the Anthropic API, a local server
speaking the Messages API, or the offline `DemoModel`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from functools import cache
from typing import TYPE_CHECKING, Literal

from .facts import facts_for

if TYPE_CHECKING:
    from .stream import ModelRequest, StreamEvent

DEFAULT_MODEL = "claude-sonnet-4-6"


@cache
def _generation() -> re.Pattern[str]:
    return re.compile(
        r"claude-(?:(opus|sonnet|haiku|fable|mythos)-(\d+)(?:-(\d{1,2}))?(?![0-9])"
        r"|(\d+)-(?:(\d)-)?(opus|sonnet|haiku))"
    )


def model_generation(model: str) -> tuple[str, tuple[int, int]] | None:
    """`claude-sonnet-4-6` -> ("sonnet", (4, 6)); `claude-3-5-haiku-latest` -> ("haiku", (3, 5)); else None."""
    match = _generation().search(model)
    if match is None:
        return None
    family, major, minor, old_major, old_minor, old_family = match.groups()
    if family is None:
        return old_family, (int(old_major), int(old_minor or 0))
    # A date suffix (claude-opus-4-20250514) is not a minor version.
    return family, (int(major), int(minor) if minor is not None else 0)


def context_window_for(model: str, default: int = 200_000) -> int:
    """The model's context window (engine/models/facts.py, settings first); `default` when unknown."""
    return facts_for(model).context_window or default


def output_cap_for(model: str, default: int = 64_000) -> int:
    """The most output tokens one response of the model may have; `default` when unknown."""
    return facts_for(model).output_cap or default


# How a model call failed, whatever the provider (each translates its errors to these).
ModelErrorKind = Literal[
    "overloaded", "rate_limit", "server", "connection", "timeout", "prompt_too_long",
    "auth", "permission", "invalid_request", "not_found", "api_error", "refusal",
]


class ModelError(Exception):
    """A failed model call, classified (`ModelErrorKind`) so the loop can decide what to do."""

    RETRYABLE = frozenset({"overloaded", "rate_limit", "server", "connection", "timeout", "api_error"})

    def __init__(
        self,
        kind: ModelErrorKind | str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        mid_stream: bool = False,
        should_retry: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.mid_stream = mid_stream
        # The server's `x-should-retry` header, when it sent one: it overrides the kind.
        self.should_retry = should_retry
        # Set by the loop when retrying stopped for the time limit: how many attempts, how long.
        self.gave_up: str | None = None

    @property
    def retryable(self) -> bool:
        if self.should_retry is not None:
            return self.should_retry
        return self.kind in self.RETRYABLE

    def __repr__(self) -> str:
        return f"ModelError({self.kind!r}, {self.message!r}, status={self.status})"


class ModelClient:
    """What the loop and the session need from a model.  Subclasses implement `stream`;
    the rest has defaults for a model that cannot count tokens or list models."""

    name: str = ""
    # A short label for the header, e.g. "claude-sonnet-4-6" or "demo (offline)".
    label: str = ""
    # The offline demo model (no network); `requested`: the person asked for it (--offline).
    offline: bool = False
    requested: bool = False
    # A cut-off answer may be asked again with a larger max_tokens (the Messages API's models).
    escalates_output: bool = True
    # What to check when the server refuses the credentials, the model or the endpoint
    # (None: the Messages API's variables).
    credential_hint: str | None = None

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one response.  Raises `ModelError`.  Closing the iterator early
        (abort) must close the underlying connection."""
        raise NotImplementedError

    def encode(self, request: ModelRequest) -> object | None:
        """The request's body as it would be sent, made now (a warm-up keeps what it can of it
        for the next request); None: a client that makes it as it sends."""
        return None

    async def count_tokens(self, request: ModelRequest) -> int | None:
        """The exact input tokens of `request`; None when the model cannot say."""
        return None

    async def list_models(self) -> list[str]:
        """The model ids the server offers; [] when it cannot say."""
        return []

    async def aclose(self) -> None:
        """Release connections, on the loop that used them."""
        return None

    def prepare(self) -> None:
        """Do ahead what the first request would (load the HTTP stack, its TLS context).
        Run in a thread while nothing waits for it; touches no event loop."""
        return None
