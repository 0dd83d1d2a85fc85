"""The built-in tools, in the order the model sees them."""

from __future__ import annotations

from pathlib import Path

from agent_tui.tools.agent import AgentTool
from agent_tui.tools.ask_user import AskUserQuestionTool
from agent_tui.tools.base import Tool
from agent_tui.tools.bash import BashTool, KillShellTool
from agent_tui.tools.edit import EditTool
from agent_tui.tools.exit_plan import ExitPlanModeTool
from agent_tui.tools.glob import GlobTool
from agent_tui.tools.grep import GrepTool
from agent_tui.tools.multiedit import MultiEditTool
from agent_tui.tools.notebook import NotebookEditTool
from agent_tui.tools.read import ReadTool
from agent_tui.tools.sandbox import SandboxConfig
from agent_tui.tools.skill import SkillTool
from agent_tui.tools.todo import TodoWriteTool
from agent_tui.tools.webfetch import WebFetchTool
from agent_tui.tools.websearch import WebSearchTool
from agent_tui.tools.write import WriteTool


def default_tools(cwd: Path | None = None, sandbox: SandboxConfig | None = None) -> list[Tool]:
    """Fresh instances of every built-in tool (the Session attaches itself to Agent).

    `cwd` is the session's working directory: file tools show paths relative to it;
    `sandbox` is Bash's sandbox, from the settings' `sandbox` block (None: the defaults).
    """
    return [
        ReadTool(),
        GlobTool(),
        GrepTool(),
        BashTool(sandbox or SandboxConfig()),
        EditTool(cwd=cwd),
        MultiEditTool(cwd=cwd),
        WriteTool(cwd=cwd),
        NotebookEditTool(cwd=cwd),
        TodoWriteTool(),
        AgentTool(),
        KillShellTool(),
        ExitPlanModeTool(),
        AskUserQuestionTool(),
        SkillTool(),
        WebFetchTool(),
        WebSearchTool(),
    ]

