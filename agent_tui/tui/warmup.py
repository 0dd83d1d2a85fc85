"""What the first answer needs and the first paint does not, loaded in the background.

Started once the transcript is on screen: without it, the first answer's frames would
stall while markdown-it and the Pygments lexers load, and
the first request's while httpx2 and what it loads on first use do.
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

    from .widgets.markdown_lite import _lexer, _parser

    _parser()
    for language in ("python", "bash", "json", "diff", "javascript", "typescript"):
        _lexer(language)
