"""Extended thinking: what a request asks for, per model.

Setting (`thinking`, `--thinking`): "off", "adaptive", or a token budget;
unset means "adaptive" for Claude models and off for others (a local server
may not know the field).  Opus/Sonnet 4.6 and later decide for themselves
(`{"type": "adaptive"}`, interleaved with tool calls, steered by `effort`);
the Claude 4 models before them and Sonnet 3.7 take a budget
(`{"type": "enabled", "budget_tokens": N}`, interleaved with tools through a
beta header); models that only think adaptively get adaptive whatever the
budget.  A budget must stay below max_tokens, and at least 1024.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .base import model_generation
from .facts import facts_for, overridden

if TYPE_CHECKING:
    from .stream import ModelRequest

# Budget thinking between tool calls needs this beta; adaptive thinking interleaves on its own.
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
MIN_BUDGET = 1024
DEFAULT_BUDGET = 16_000

# Families newer than Claude 4 that think adaptively only.
_ADAPTIVE_ONLY = frozenset({"fable", "mythos"})


@dataclass(frozen=True, slots=True)
class ThinkingRequest:
    thinking: dict[str, Any] | None = None
    effort: str | None = None
    betas: tuple[str, ...] = ()


def supports_thinking(model: str) -> bool:
    """Whether `model` thinks: as the `models` setting says (a local model that does, a Claude
    model behind a server that does not), else by its Claude generation."""
    said = facts_for(model, "anthropic").thinking
    if said is not None and model_generation(model) is None or model in overridden():
        return bool(said)
    gen = model_generation(model)
    return gen is not None and (gen[1] >= (4, 0) or gen == ("sonnet", (3, 7)))


def supports_adaptive(model: str) -> bool:
    gen = model_generation(model)
    if gen is None:
        return False
    family, version = gen
    return family in _ADAPTIVE_ONLY or version >= (5, 0) or (family in ("opus", "sonnet") and version >= (4, 6))


def adaptive_only(model: str) -> bool:
    gen = model_generation(model)
    if gen is None:
        return False
    family, version = gen
    return family in _ADAPTIVE_ONLY or (family == "opus" and version >= (4, 7)) or version >= (5, 0)


def continues_with_thinking(messages: list[dict[str, Any]], thinking: dict[str, Any] | None) -> bool:
    """Whether `thinking` may be sent with `messages`.  With a budget, the API requires the
    assistant turn that tool results answer to begin with a thinking block; one written
    without thinking (thinking turned on mid-turn, or stripped by a model fallback) cannot."""
    if not thinking or thinking.get("type") != "enabled" or len(messages) < 2:
        return True
    last, previous = messages[-1], messages[-2]
    content = last.get("content")
    answers_tools = isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
    if not answers_tools or previous.get("role") != "assistant":
        return True
    blocks = previous.get("content") or []
    return bool(blocks) and blocks[0].get("type") in ("thinking", "redacted_thinking")


def request_thinking(request: ModelRequest) -> ThinkingRequest:
    """What a Messages-API request carries for the provider-neutral `request`: its explicit
    `thinking` object (and betas) when it has one, else what its `reasoning` setting means for
    the model, dropped where the history cannot continue with thinking."""
    if request.thinking is not None or request.betas:
        return ThinkingRequest(request.thinking, request.effort, request.betas)
    thinking = thinking_for(
        request.model, request.reasoning, request.max_tokens, effort=request.effort, tools=bool(request.tools)
    )
    if not continues_with_thinking(request.messages, thinking.thinking):
        thinking = replace(thinking, thinking=None, betas=())
    return thinking


def thinking_for(
    model: str, setting: str | int | None, max_tokens: int, *, effort: str | None = None, tools: bool = True
) -> ThinkingRequest:
    """The `thinking`, `output_config.effort` and beta headers a request to `model` carries."""
    adaptive = supports_adaptive(model)
    effort = effort if adaptive else None
    if setting == "off":
        return ThinkingRequest(effort=effort)
    claude = model_generation(model) is not None
    if not supports_thinking(model) and (setting is None or claude):
        return ThinkingRequest()
    if adaptive and (setting in (None, "adaptive") or adaptive_only(model)):
        return ThinkingRequest({"type": "adaptive"}, effort)
    budget = setting if isinstance(setting, int) else DEFAULT_BUDGET
    budget = min(budget, max_tokens - 1)
    if budget < MIN_BUDGET:
        return ThinkingRequest(effort=effort)
    gen = model_generation(model)
    betas = (INTERLEAVED_THINKING_BETA,) if tools and gen is not None and gen[1] >= (4, 0) else ()
    return ThinkingRequest({"type": "enabled", "budget_tokens": budget}, effort, betas)
