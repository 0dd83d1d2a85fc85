"""Dataclasses' generated methods, compiled once and kept (docs/architecture.md §8).

Making a dataclass compiles the source of its `__init__`, `__repr__`, `__eq__` and the rest,
each time the class is made: a start compiles 400-700 such functions (Textual's dataclasses,
then the engine's events), 75-125 ms of a start's CPU.  Here each source text's code object is
kept in a file of agent-tui's cache folder, named after the interpreter and its bytecode's magic
number (bytecode is not portable between versions); a start looks each text up there and compiles only what it has not
seen.  The cache folder is agent-tui's own: the permission policy asks before any write there and
the sandbox mounts it read-only (`shell/protected.py`, `tools/sandbox.py`), as for the code of the
installation itself, since what this file holds runs.

`dataclasses` calls `exec` by its module-global name; `install` gives the module one of its own
that looks the text up first.  An interpreter whose `dataclasses` makes its functions otherwise
just never calls it.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import marshal
import os
import sys
import tempfile
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

# The interpreter and its bytecode's magic number (as a `.pyc` file is checked against it).
FILE_NAME = f"dataclass-code-{sys.implementation.cache_tag}-{MAGIC_NUMBER.hex()}.marshal"
# Past this many kept texts (several versions of the libraries' dataclasses), a save keeps only
# those this run used.
MAX_ENTRIES = 5000


class CodeCache:
    """Source text -> compiled code, read from and written to `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[str, CodeType] = {}
        self.used: set[str] = set()
        self.added = 0

    def load(self) -> None:
        """Read the kept code; an unreadable or malformed file is as good as none."""
        try:
            loaded = marshal.loads(self.path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            return
        if isinstance(loaded, dict):
            self.codes = {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, CodeType)}

    def exec(self, source: Any, globals: dict | None = None, locals: dict | None = None) -> None:  # noqa: A002
        """`exec`, with a source text compiled only the first time it is seen."""
        if not isinstance(source, str):
            return builtins.exec(source, globals, locals)
        code = self.codes.get(source)
        if code is None:
            # As `exec` compiles it in `dataclasses`: none of this module's `__future__` flags.
            code = self.codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
            self.added += 1
        self.used.add(source)
        return builtins.exec(code, globals, locals)

    def save(self) -> None:
        """Write the kept code when this run compiled anything new (atomically: a concurrent run
        reads the old file or the new one)."""
        if not self.added:
            return
        codes = self.codes
        if len(codes) > MAX_ENTRIES:
            codes = {k: v for k, v in codes.items() if k in self.used}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".dataclass-code-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(marshal.dumps(codes))
                os.replace(temp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError:
            return  # a cache: the next start compiles again
        self.added = 0


_installed: CodeCache | None = None


def install(folder: Path) -> CodeCache | None:
    """From now on, dataclasses made in this process take their code from `folder`'s cache; what
    they compiled is written there at exit.  Not for a relative folder (it would land in the
    project)."""
    global _installed
    import dataclasses

    if not folder.is_absolute():
        return None
    if _installed is None:
        _installed = CodeCache(folder / FILE_NAME)
        _installed.load()
        atexit.register(_installed.save)
    dataclasses.exec = _installed.exec  # type: ignore[attr-defined]
    return _installed


def uninstall() -> None:
    """Dataclasses compile their code as usual again (what was compiled is still saved at exit)."""
    import dataclasses

    if getattr(dataclasses, "exec", None) is not None and _installed is not None:
        del dataclasses.exec  # type: ignore[attr-defined]
