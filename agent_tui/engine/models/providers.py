"""Claude on Amazon Bedrock and Google Vertex AI, through the anthropic SDK's clients, and
which provider a run uses (`chosen_provider`: the `provider` setting, else the environment).

These providers sign requests their own way (AWS SigV4, Google OAuth) and
Bedrock frames its stream as AWS event-stream, so here the SDK earns its
import: it is loaded only when one of them is chosen, with
`AGENT_TUI_PROVIDER=bedrock|vertex` or Claude Code's `CLAUDE_CODE_USE_BEDROCK=1`
/ `CLAUDE_CODE_USE_VERTEX=1`.  Install the extras: `pip install
'agent-tui[bedrock]'` or `'agent-tui[vertex]'`.  Credentials and region come
from the providers' usual environment (AWS_REGION / AWS profile;
CLOUD_ML_REGION and ANTHROPIC_VERTEX_PROJECT_ID).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from .anthropic import request_body
from .base import ModelClient, ModelError

if TYPE_CHECKING:  # `provider_from_env` is on the first frame's path; streaming is not
    from .stream import ModelRequest, StreamEvent

PROVIDERS = ("anthropic", "openai", "bedrock", "vertex")
# Model ids differ per provider (Bedrock: anthropic.claude-…; Vertex: claude-…@date).
DEFAULT_MODELS = {"bedrock": "anthropic.claude-sonnet-4-6", "vertex": "claude-sonnet-4-6"}


def provider_from_env(environ: Mapping[str, str] | None = None) -> str:
    """"anthropic" unless the environment asks for Bedrock or Vertex AI."""
    env = os.environ if environ is None else environ
    chosen = env.get("AGENT_TUI_PROVIDER", "").strip().lower()
    if chosen in PROVIDERS:
        return chosen
    for provider, var in (("bedrock", "CLAUDE_CODE_USE_BEDROCK"), ("vertex", "CLAUDE_CODE_USE_VERTEX")):
        if env.get(var, "").strip().lower() in ("1", "true", "yes"):
            return provider
    return "anthropic"


def chosen_provider(setting: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The provider the settings name (`provider`, or AGENT_TUI_PROVIDER), else the environment's.
    An unknown name is a RuntimeError naming the choices: never a silent fallback."""
    if not setting:
        return provider_from_env(environ)
    name = setting.strip().lower()
    if name not in PROVIDERS:
        raise RuntimeError(f"unknown provider {setting!r}; the providers are: {', '.join(PROVIDERS)}")
    return name


def openai_base_url(setting: str | None, setting_source: str, environ: Mapping[str, str] | None = None) -> str | None:
    """OPENAI_BASE_URL, else the `baseUrl` setting unless ANTHROPIC_BASE_URL set it (that one
    names a Messages-API server); None: OpenAI's own."""
    env = os.environ if environ is None else environ
    if env.get("OPENAI_BASE_URL"):
        return env["OPENAI_BASE_URL"]
    return setting if setting and "ANTHROPIC_BASE_URL" not in setting_source else None


class ProviderModel(ModelClient):
    """A `ModelClient` over the SDK's Bedrock or Vertex client (the same events as `AnthropicModel`)."""

    def __init__(self, provider: str, model: str | None = None, *, client: Any = None, timeout: float = 600.0) -> None:
        if provider not in ("bedrock", "vertex"):
            raise ValueError(f"unknown provider {provider!r}")
        self.provider = provider
        self.name = model or DEFAULT_MODELS[provider]
        self.label = f"{self.name} ({'Bedrock' if provider == 'bedrock' else 'Vertex AI'})"
        self._client = client if client is not None else _make_client(provider, timeout)

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import anthropic

        from .stream import StreamAccumulator
        from .thinking import request_thinking

        body = request_body(request, caching=request.prompt_caching)
        body.pop("stream")
        extra: dict[str, Any] = {}
        betas = request_thinking(request).betas
        if betas:
            extra["extra_headers"] = {"anthropic-beta": ",".join(betas)}
        acc = StreamAccumulator()
        try:
            events = await self._client.messages.create(stream=True, **body, **extra)
            async with events:
                async for raw in events:
                    event = acc.feed(raw)
                    if event is not None:
                        yield event
            if not acc.stopped:
                raise ModelError("connection", "The stream ended before message_stop", mid_stream=acc.started)
        except anthropic.APIStatusError as exc:
            raise _status_error(exc, acc.started) from exc
        except anthropic.APITimeoutError as exc:
            raise ModelError("timeout", "The request timed out", mid_stream=acc.started) from exc
        except anthropic.APIConnectionError as exc:
            raise ModelError("connection", f"Connection error: {exc.__cause__ or exc}", mid_stream=acc.started) from exc


def _make_client(provider: str, timeout: float) -> Any:
    """The SDK's client; RuntimeError with what to do when the extra or the configuration is missing."""
    needs = "boto3" if provider == "bedrock" else "google.auth"
    if importlib.util.find_spec(needs.split(".")[0]) is None:
        raise RuntimeError(f"{provider} needs {needs}: pip install 'agent-tui[{provider}]'")
    try:
        if provider == "bedrock":
            from anthropic import AsyncAnthropicBedrock

            return AsyncAnthropicBedrock(max_retries=0, timeout=timeout)
        from anthropic import AsyncAnthropicVertex

        return AsyncAnthropicVertex(max_retries=0, timeout=timeout)
    except ValueError as exc:  # no region / project configured
        raise RuntimeError(f"{provider}: {exc}") from exc


def _status_error(exc: Any, started: bool) -> ModelError:
    from .transport import classify, retry_after, should_retry

    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    error_type = error.get("type") if isinstance(error, dict) else getattr(exc, "type", None)
    message = (error.get("message") if isinstance(error, dict) else None) or str(exc)
    status = getattr(exc, "status_code", None)
    headers = exc.response.headers
    return ModelError(
        classify(status if status != 200 else None, error_type, message),
        message,
        status=status,
        retry_after=retry_after(headers),
        should_retry=should_retry(headers),
        mid_stream=started or status == 200,
    )
