"""The first frame before the session: what it shows, and how the session behind it is made.

`agent-tui` draws its first frame before it loads the engine (the loop, the executor,
the tools, the permission policy, hooks and the transcript store: about a fifth of
what start-up would cost).  A `SessionStart` carries what that frame shows (model,
directory, permission mode, session id) and a `build` that makes the session once the
frame is out: the app loads the engine in a thread meanwhile, so keys typed early wait
in the input, and a prompt sent early runs when the session is there.  A resumed
session's transcript is read before the app (`resumed`): the app draws its last screen
from it, then loads the engine and makes the session that goes on with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings
    from ..engine import ModelClient, Session, Transcript


# The session, and the `.mcp.json` servers nobody approved or rejected yet (the app asks).
Built = tuple["Session", dict[str, dict]]


def load_engine() -> None:
    """Import what `build` and the app's session wiring use (safe in a thread: only imports)."""
    from ..engine import Session  # noqa: F401  (the loop, executor, context, hooks, permissions, store)
    from ..tools import registry  # noqa: F401
    from . import bridge, conversation, mentions  # noqa: F401


@dataclass
class SessionStart:
    cwd: Path
    settings: Settings
    model: ModelClient
    mode: str
    session_id: str
    # Runs on the app's event loop, after `load`; the session it makes has `session_id`.
    build: Callable[[], Built]
    # Runs in a thread while the first frame is on screen.
    load: Callable[[], None] = load_engine
    # A stored session `build` resumes, already read: its last screen is drawn before the engine loads.
    resumed: Transcript | None = None

    @classmethod
    def of(cls, session: Session, settings: Settings) -> SessionStart:
        """For a session made before the app (a resumed one, tests): nothing left to load or build."""
        return cls(session.cwd, settings, session.model, session.permission_mode, session.session_id,
                   lambda: (session, {}), lambda: None)

