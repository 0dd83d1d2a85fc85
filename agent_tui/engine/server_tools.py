"""The request's `tools`: every client tool, and the API's server tools where they may run.

A server tool (WebSearch, tools/websearch.py) runs inside the API's answer, so no
permission prompt can come between the model and the search: whether it is
offered is decided here, once per query, from the permission rules.  It is
offered to Claude models that have it, unless a `WebSearch` deny rule stands;
where nobody could be asked (print mode, dontAsk) only with an allow rule or in
bypassPermissions.  `WebSearch(domain:…)` allow rules become `allowed_domains`,
deny rules `blocked_domains`.
"""

from __future__ import annotations

from typing import Any

from ..tools.base import Tool, tool_to_api
from .permissions.policy import PermissionPolicy
from .permissions.rules import DOMAIN_PREFIX, Rule

# Claude models before web search (the API rejects the server tool for them).
_WITHOUT_WEB_SEARCH = (
    "claude-2", "claude-instant", "claude-3-haiku", "claude-3-opus", "claude-3-sonnet", "claude-3-5-sonnet-20240620",
)


def has_web_search(model: str) -> bool:
    """Whether the Messages API offers web search to `model` (Claude models from 3.5 on; no
    other provider's model speaks the server tool)."""
    return model.startswith("claude-") and not model.startswith(_WITHOUT_WEB_SEARCH)


def request_tools(tools: list[Tool], model: str, policy: PermissionPolicy) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        server_definition = getattr(tool, "server_definition", None)
        if server_definition is None:
            out.append(tool_to_api(tool))
            continue
        domains = _domain_rules(policy, tool.name)
        if has_web_search(model) and _offered(policy, tool.name, domains):
            allowed = [] if domains["whole_allow"] else domains["allow"]
            out.append(server_definition(allowed_domains=allowed, blocked_domains=domains["deny"]))
    return out


def _domain_rules(policy: PermissionPolicy, name: str) -> dict[str, Any]:
    """The domains of `name`'s rules by behaviour, and whether a rule names the whole tool."""
    found: dict[str, Any] = {"allow": [], "deny": [], "whole_allow": False, "whole_deny": False}
    for behavior in ("allow", "deny"):
        for entry in policy.entries(behavior):
            try:
                rule = Rule.parse(entry.rule)
            except ValueError:
                continue
            if rule.tool != name:
                continue
            if rule.whole_tool:
                found[f"whole_{behavior}"] = True
            elif rule.content is not None and rule.content.startswith(DOMAIN_PREFIX):
                found[behavior].append(rule.content[len(DOMAIN_PREFIX) :].strip())
    return found


def _offered(policy: PermissionPolicy, name: str, domains: dict[str, Any]) -> bool:
    if domains["whole_deny"]:
        return False
    if policy.mode == "bypassPermissions" or domains["whole_allow"] or domains["allow"]:
        return True
    return policy.interactive and policy.mode != "dontAsk"
