"""What the first answer needs and the first paint does not, loaded in the background.

Started once the transcript is on screen: without it, the first answer's frames would
stall while markdown-it and the Pygments lexers load, and the first prompt
while httpx2, the file watcher, the slash-command table and MCP's prompt
expansion load on first use.
"""

from __future__ import annotations

import threading


def warm_up() -> None:
    """Start loading it in a daemon thread (the lexers: the languages answers use most)."""
    threading.Thread(target=_load_for_first_answer, name="warm-up", daemon=True).start()


def _load_for_first_answer() -> None:
    import anyio._backends._asyncio  # noqa: F401  (what httpx2 and the file watcher load on first use)
    import h11  # noqa: F401
    import httpcore2  # noqa: F401
    import httpx2  # noqa: F401  (the model transport's HTTP client)
    import watchfiles  # noqa: F401  (the file watcher the first prompt starts)

    from ..engine import ElicitationForm  # noqa: F401  (MCP prompts and forms: each prompt is looked at)
    from . import commands  # noqa: F401  (the slash-command table a prompt is looked up in)
    from .widgets import answer  # noqa: F401  (the streamed answer's widget)
    from .widgets.markdown_lite import _lexer, _parser

    _parser()
    for language in ("python", "bash", "json", "diff", "javascript", "typescript"):
        _lexer(language)
