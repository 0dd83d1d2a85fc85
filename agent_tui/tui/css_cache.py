"""Parsed CSS kept between runs.

Textual parses every stylesheet (the app's and each widget class's `DEFAULT_CSS`) with a
tokenizer written in Python each time a program starts: about 70 KB of CSS, some 40 ms of
the 0.6 s before agent-tui's first frame on a slow machine. The parsed rules depend only on
the CSS text, where it came from, and the theme's variables, so a run stores them and the
next run reads them back, several times faster than parsing.

The store is one file per theme (its variables), Textual install and Python version, in
the user's cache folder (`AGENT_TUI_CACHE_DIR` overrides it). A file holds what it was made
for, and is used only for exactly that; an entry is found by the CSS text itself, so changed
CSS is parsed again; a file that cannot be read is ignored.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

from textual.css import parse as textual_parse
from textual.css.stylesheet import Stylesheet

# Bumped when what is stored changes shape.
_FORMAT = 1
# Entries kept in one file: each stylesheet's CSS that a run parses, old versions included.
MAX_ENTRIES = 400


def cache_dir() -> Path:
    """agent-tui's cache folder (`AGENT_TUI_CACHE_DIR` overrides the platform default)."""
    override = os.environ.get("AGENT_TUI_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("agent-tui"))


class CachedStylesheet(Stylesheet):
    """A Textual stylesheet that reads parsed rules from, and adds them to, a file per theme."""

    def __init__(self, *, variables: dict[str, str] | None = None, folder: Path | None = None) -> None:
        super().__init__(variables=variables)
        self._folder = folder
        self._file: tuple[Path, tuple] | None = None  # the current theme's file and what it is for
        self._stored: dict[tuple, bytes] | None = None  # and what it holds, read on first use
        self._fresh: dict[Path, tuple[tuple, dict[tuple, bytes]]] = {}  # parsed this run: by file, what for

    def set_variables(self, variables: dict[str, str]) -> None:
        super().set_variables(variables)
        self._file = self._stored = None

    def _parse_rules(
        self,
        css: str,
        read_from: Any,
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> list:
        key = (css, read_from, is_default_rules, tie_breaker, scope)
        if key not in self._parse_cache and self._folder is not None:
            blob = self._entries().get(key)
            if blob is not None:
                with contextlib.suppress(Exception):
                    self._parse_cache[key] = pickle.loads(blob)
        if key in self._parse_cache:
            return self._parse_cache[key]
        rules = super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        if self._folder is not None and not any(rule.errors for rule in rules):
            with contextlib.suppress(Exception):  # a rule that cannot be pickled is parsed again next run
                entries = self._fresh.setdefault(self._path(), (self._identity(), {}))[1]
                entries[key] = pickle.dumps(rules, pickle.HIGHEST_PROTOCOL)
        return rules

    def save(self) -> None:
        """Add what this run parsed to the files; never raises (the cache is only a speed-up)."""
        fresh, self._fresh = self._fresh, {}
        for path, (identity, entries) in fresh.items():
            with contextlib.suppress(OSError, pickle.PickleError, EOFError, ValueError, TypeError):
                merged = {**_read(path, identity), **entries}
                if len(merged) > MAX_ENTRIES:  # the oldest go first
                    merged = dict(list(merged.items())[-MAX_ENTRIES:])
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".css-", suffix=".tmp")
                try:
                    with os.fdopen(fd, "wb") as f:
                        pickle.dump((identity, merged), f, pickle.HIGHEST_PROTOCOL)
                    os.replace(tmp, path)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    raise
                if path == self._path():
                    self._stored = merged

    def _path(self) -> Path:
        return self._name()[0]

    def _identity(self) -> tuple:
        return self._name()[1]

    def _name(self) -> tuple[Path, tuple]:
        if self._file is None:
            assert self._folder is not None
            # Textual's parser, by where it is installed and when: an upgrade makes new files.
            parser = os.stat(textual_parse.__file__)
            identity = (_FORMAT, textual_parse.__file__, parser.st_size, parser.st_mtime_ns, sys.version,
                        sorted(self._variables.items()))
            # Only a name: two identities that share one are told apart by the file's content.
            name = f"css-{zlib.crc32(repr(identity).encode()):08x}.pickle"
            self._file = (self._folder / name, identity)
        return self._file

    def _entries(self) -> dict[tuple, bytes]:
        if self._stored is None:
            self._stored = _read(self._path(), self._identity())
        return self._stored


def _read(path: Path, identity: tuple) -> dict[tuple, bytes]:
    try:
        made_for, entries = pickle.loads(path.read_bytes())
    except Exception:  # missing, partly written, of an older format, or damaged: parse instead
        return {}
    return entries if made_for == identity and isinstance(entries, dict) else {}
