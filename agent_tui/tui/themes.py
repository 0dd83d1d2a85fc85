"""Themes as data: TOML files turned into `textual.theme.Theme` objects.

The project's `themes/` folder holds the built-in ones (dark, light, high
contrast); a user adds more by dropping files of the same shape into
`<config dir>/agent-tui/themes/`.  Each file sets `name` and any `Theme`
field, plus an optional `[variables]` table of design-variable overrides.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable
from pathlib import Path

from textual.theme import Theme

from .. import themes as _builtin
from ..config import config_dir

DEFAULT_THEME = "agent-dark"
# The repository's top-level `themes/` folder, installed as the package `agent_tui.themes`.
# (Its folder, as installed: importlib.resources would load zip support the first frame does not need.)
BUILTIN_DIR = Path(_builtin.__file__).parent

_FIELDS = {f.name for f in dataclasses.fields(Theme)}


class ThemeFileError(ValueError):
    """A theme file that cannot be turned into a Theme (the message names the file)."""


def theme_dirs() -> list[Path]:
    return [BUILTIN_DIR, config_dir() / "themes"]


def load_theme(path: Path) -> Theme:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ThemeFileError(f"{path}: {exc}") from exc
    unknown = set(data) - _FIELDS
    if unknown:
        raise ThemeFileError(f"{path}: unknown theme fields {sorted(unknown)}")
    if not isinstance(data.get("name"), str) or not isinstance(data.get("primary"), str):
        raise ThemeFileError(f"{path}: a theme needs a `name` and a `primary` colour")
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeFileError(f"{path}: [variables] must be a table")
    data["variables"] = {str(k): str(v) for k, v in variables.items()}
    return Theme(**data)


def load_themes(dirs: Iterable[Path] | None = None) -> tuple[list[Theme], list[str]]:
    """Every theme found, in file-name order, and the problems met on the way."""
    themes: list[Theme] = []
    problems: list[str] = []
    for folder in dirs if dirs is not None else theme_dirs():
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                themes.append(load_theme(path))
            except ThemeFileError as exc:
                problems.append(str(exc))
    return themes, problems
