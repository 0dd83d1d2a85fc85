"""The `agent-tui` command: Ctrl+C at any point of start-up exits 130, without a traceback."""

from __future__ import annotations

import gc
import sys


def main() -> int:
    from . import interrupts

    # Start-up makes tens of thousands of objects that live as long as the program (modules,
    # classes, styles): collecting while they are made only walks them again and again.
    # `cli` freezes them and turns the collector back on once start-up is over.
    gc.disable()
    interrupts.watch()
    try:
        # Imported here, so that an interrupt during the imports is caught too.
        from .cli import main as run

        return run()
    except KeyboardInterrupt:
        # 128 + SIGINT, as a shell reports a program Ctrl+C stopped.
        return 130


if __name__ == "__main__":
    sys.exit(main())
