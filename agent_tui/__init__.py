"""agent-tui.  The package root stays a leaf (the engine imports `__version__` from it):
`ask` and `SessionConfig` are loaded by name on first use, which also lets `agent-tui` draw
its first frame before the engine loads."""

from importlib import import_module

__version__ = "0.1.0"

__all__ = ["SessionConfig", "__version__", "ask"]

_EXPORTS = {"ask": ".scripting", "SessionConfig": ".session_config"}


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name], __name__), name)
