"""What a shell word names on disk, when that is known before the command runs.

The permission checks only vouch for paths they can see: `static` says
whether a word's value is fixed (no parameter or command substitution, no
brace expansion, no `~+` / `~-`, no glob that could match `..`), and
`resolve_paths` turns a fixed value into the real paths it can touch,
expanding globs the way bash does (hidden files only when the pattern
starts with a dot) and following symlinks.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re

from .parse import Word

# $'…' is decoded by the parser: the `$` in front of it expands nothing.
_ANSI_C = re.compile(r"\$'(?:\\.|[^'\\])*'")
_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
_BRACE = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}|\{.*(?:,|\.\.).*\}", re.DOTALL)
_GLOB = re.compile(r"[*?\[]")
# `~+` / `~-` as a path's first component, wherever it stands in the word.
_DIR_TILDE = re.compile(r"(?:^|[=:]|^-[A-Za-z]+)~[+-](?:/|$)")
# A glob pattern for certain: a lone `[` (the test command) is not one.
_MAGIC = re.compile(r"[*?]|\[[^\]]+\]")
# A glob cannot follow a path this far: past it the answer is "unknown".
_MAX_MATCHES = 2000


def static(word: Word) -> bool:
    """The word means the same text whenever the command runs (globs aside, see `resolve_paths`)."""
    if word.expands:
        return False
    unquoted = _QUOTED.sub("''", _ANSI_C.sub("''", word.raw))
    if "$" in unquoted or "`" in unquoted or _BRACE.search(unquoted):
        return False
    if _DIR_TILDE.search(unquoted):
        # ~+ is $PWD and ~- is $OLDPWD: whatever a cd made them.  Anywhere in the word, not only
        # at its start: an attached option value (`-f~+/../x`) or an assignment-like `opt=~+/x`
        # would be read by the path check as a folder named `~+`, which a symlink can be.
        return False
    return not any(_may_match_dotdot(piece) for piece in word.value.split("/"))


def _may_match_dotdot(piece: str) -> bool:
    """`.*` and `.?` match `..` in bash without globskipdots; `[.].` tricks too (`*` alone never does)."""
    return bool(_MAGIC.search(piece)) and piece.startswith((".", "[")) and fnmatch.fnmatchcase("..", piece)


def expand_tilde(value: str, home: str) -> str:
    if value == "~" or value.startswith("~/"):
        return home + value[1:]
    if value.startswith("~"):
        return os.path.expanduser(value)
    return value


def resolve_paths(value: str, cwd: str, home: str) -> list[str] | None:
    """The real paths `value` (a static word) can name from `cwd`; None when a glob matches too much."""
    path = os.path.join(cwd, expand_tilde(value, home))
    found = [os.path.realpath(path)]
    if _GLOB.search(value):
        for count, match in enumerate(glob.iglob(path)):
            if count >= _MAX_MATCHES:
                return None
            found.append(os.path.realpath(match))
    return found
