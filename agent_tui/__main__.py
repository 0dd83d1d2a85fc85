"""The `agent-tui` command: Ctrl+C at any point of start-up exits 130, without a traceback."""

from __future__ import annotations

import sys


def main() -> int:
    from . import startup

    startup.begin()  # `cli` calls `startup.end()` just before the TUI or print mode runs
    try:
        from . import code_cache, paths

        code_cache.install(paths.cache_dir())  # dataclasses' methods compiled once, not at each start
        # Imported here, so that an interrupt during the imports is caught too.
        from .cli import main as run

        return run()
    except KeyboardInterrupt:
        # 128 + SIGINT, as a shell reports a program Ctrl+C stopped.
        return 130


if __name__ == "__main__":
    sys.exit(main())
