"""Start-up's beginning and end: the garbage collector paused, and Ctrl+C remembered.

Start-up makes tens of thousands of objects that live as long as the program (modules,
classes, styles): collecting while they are made only walks them again and again, so
the collector waits, and at the end what was made is frozen out of later collections.

Ctrl+C during start-up is remembered as well as raised. Python drops an exception
raised inside a weakref callback ("Exception ignored in ..."), and the import system
runs such callbacks, so a KeyboardInterrupt that lands there
would be lost and the run would go on as if no key had been pressed. The flag keeps it,
and Python's "Exception ignored" traceback for it is not printed.
"""

from __future__ import annotations

import gc
import signal
import sys

_interrupted = False


def _on_sigint(_signum: int, _frame: object) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def _unraisable(args: sys.UnraisableHookArgs) -> None:
    if isinstance(args.exc_value, KeyboardInterrupt):
        return  # remembered in the flag: `end()` ends the run with 130
    sys.__unraisablehook__(args)


def begin() -> None:
    """From here until `end()`: no garbage collection, and every Ctrl+C is remembered."""
    gc.disable()
    signal.signal(signal.SIGINT, _on_sigint)
    sys.unraisablehook = _unraisable


def end() -> bool:
    """Freeze what start-up made and collect again; hand Ctrl+C back to Python's default
    handler (asyncio and Textual take it from there). True when one arrived during
    start-up, even if it was swallowed."""
    global _interrupted
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
    if signal.getsignal(signal.SIGINT) is _on_sigint:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if sys.unraisablehook is _unraisable:
        sys.unraisablehook = sys.__unraisablehook__
    seen, _interrupted = _interrupted, False
    return seen
