"""How a path is shown to a person or to the model (the one place that shortens paths), and agent-tui's
own config, data and cache folders (settings, the engine and the sandbox read the same ones)."""

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


def config_dir() -> Path:
    """The user's agent-tui config folder (`AGENT_TUI_CONFIG_DIR` overrides the platform default)."""
    override = os.environ.get("AGENT_TUI_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("agent-tui"))


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


def own_dirs() -> list[Path]:
    """agent-tui's own folders: settings (permission rules, hooks), stored sessions, and caches whose
    code it runs (`code_cache.py`).  The one list the permission policy, the danger checks and the
    sandbox keep from writes nobody approved."""
    return [config_dir(), data_dir(), cache_dir()]


def data_dir_problem() -> str | None:
    """Why agent-tui's data folder cannot keep sessions (None: it can).

    Checked at start-up: a relative `HOME` (or `AGENT_TUI_DATA_DIR`) would put it wherever the
    process happens to run, and a folder that cannot be made or written would lose every
    session silently."""
    home = os.environ.get("HOME")
    if home is not None and not os.path.isabs(home):
        # `~` would mean a folder under wherever agent-tui runs: the home-folder rules (shell rc
        # files, ~/.ssh) would guard the wrong files, and sessions would land elsewhere.
        return f"HOME={home!r} is not an absolute path; set HOME to your home folder"
    folder = data_dir()
    if not folder.is_absolute():
        return f"the data folder {str(folder)!r} is not an absolute path; set AGENT_TUI_DATA_DIR to an absolute folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or exc
        return f"cannot create the data folder {folder}: {reason}; set AGENT_TUI_DATA_DIR to a writable one"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the data folder {folder} is not writable; set AGENT_TUI_DATA_DIR to a writable folder"
    return None
