"""How a path is shown to a person or to the model: the one place that shortens paths."""

from __future__ import annotations

import os
from pathlib import Path


def shown_path(path: str | Path, cwd: str | Path | None = None, *, home: bool = True) -> str:
    """Relative to `cwd` when inside it (a relative `path` is taken from `cwd`), `~/…` under
    the home folder when `home`, else absolute."""
    if cwd is not None:
        absolute = os.path.abspath(os.path.join(cwd, path))
        for base in (os.path.abspath(cwd), os.path.realpath(cwd)):
            rel = os.path.relpath(absolute, base)
            if rel != ".." and not rel.startswith(".." + os.sep):
                return rel
    else:
        absolute = os.path.abspath(path)
    if home:
        folder = os.path.expanduser("~")
        if absolute == folder:
            return "~"
        if absolute.startswith(folder.rstrip(os.sep) + os.sep):
            return "~" + os.sep + absolute[len(folder.rstrip(os.sep)) + 1:]
    return absolute


def data_dir() -> Path:
    """agent-tui's data folder (`AGENT_TUI_DATA_DIR` overrides the platform default)."""
    override = os.environ.get("AGENT_TUI_DATA_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("agent-tui"))


def cache_dir() -> Path:
    """agent-tui's cache folder (`AGENT_TUI_CACHE_DIR` overrides the platform default)."""
    override = os.environ.get("AGENT_TUI_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("agent-tui"))
