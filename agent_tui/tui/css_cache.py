"""Parsed CSS kept between runs.

Textual parses every stylesheet (the app's and each widget class's `DEFAULT_CSS`) with a
tokenizer written in Python each time a program starts: about 70 KB of CSS, some 40 ms of
the 0.6 s before agent-tui's first frame on a slow machine. The parsed rules depend only on
the CSS text, where it came from, and the theme's variables, so a run stores them and the
next run reads them back, in less than half the time parsing takes (agent-tui's 21 stylesheets:
4.7 ms against 11 ms here).

The store is one JSON file per theme (its variables), Textual install and Python version, in
the user's cache folder (`AGENT_TUI_CACHE_DIR` overrides it). It holds data only: every value
is written as a tag and its fields, and read back through Textual's own constructors
(`RuleSet`, `Selector`, `Styles`, `Color`, `Scalar`, ...) chosen from a fixed table, so a file
someone else wrote can at worst change how the app looks, never run code in it (the earlier
pickle files could; they are never opened). A file holds what it was made for, and is used
only for exactly that; an entry is found by the CSS text itself, so changed CSS is parsed
again; a file that cannot be read, or holds a tag outside the table, is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import zlib
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import textual
from textual.color import Color
from textual.css import parse as textual_parse
from textual.css.model import CombinatorType, RuleSet, Selector, SelectorSet, SelectorType
from textual.css.scalar import Scalar, ScalarOffset, Unit
from textual.css.styles import Styles
from textual.css.stylesheet import Stylesheet
from textual.css.transition import Transition
from textual.geometry import Spacing
from textual.layout import Layout
from textual.layouts.factory import get_layout

# Bumped when what is stored changes shape.
_FORMAT = 2
# Entries kept in one file: each stylesheet's CSS that a run parses, old versions included.
MAX_ENTRIES = 400




class CachedStylesheet(Stylesheet):
    """A Textual stylesheet that reads parsed rules from, and adds them to, a file per theme."""

    def __init__(self, *, variables: dict[str, str] | None = None, folder: Path | None = None) -> None:
        super().__init__(variables=variables)
        self._folder = folder
        self._file: tuple[Path, Any] | None = None  # the current theme's file and what it is for
        self._stored: dict[tuple, Any] | None = None  # and what it holds (encoded), read on first use
        self._fresh: dict[Path, tuple[Any, dict[tuple, Any]]] = {}  # parsed this run: by file, what for

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
            stored = self._entries().get(key)
            if stored is not None:
                with contextlib.suppress(Exception):  # a value outside the table: parse instead
                    self._parse_cache[key] = decode_rules(stored)
        if key in self._parse_cache:
            return self._parse_cache[key]
        rules = super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        if self._folder is not None and not any(rule.errors for rule in rules):
            with contextlib.suppress(TypeError, ValueError):  # a value we cannot write is parsed again next run
                entries = self._fresh.setdefault(self._path(), (self._identity(), {}))[1]
                entries[key] = encode_rules(rules)
        return rules

    def save(self) -> None:
        """Add what this run parsed to the files; never raises (the cache is only a speed-up)."""
        fresh, self._fresh = self._fresh, {}
        for path, (identity, entries) in fresh.items():
            with contextlib.suppress(OSError, ValueError, TypeError):
                merged = {**_read(path, identity), **entries}
                if len(merged) > MAX_ENTRIES:  # the oldest go first
                    merged = dict(list(merged.items())[-MAX_ENTRIES:])
                text = json.dumps(
                    {"identity": identity, "entries": [[_encode(key), rules] for key, rules in merged.items()]},
                    separators=(",", ":"),
                )
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".css-", suffix=".tmp")
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as f:
                        f.write(text)
                    os.replace(tmp, path)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    raise
                if path == self._path():
                    self._stored = merged

    def _path(self) -> Path:
        return self._name()[0]

    def _identity(self) -> Any:
        return self._name()[1]

    def _name(self) -> tuple[Path, Any]:
        if self._file is None:
            assert self._folder is not None
            # Textual's version and its parser, by where it is installed and when: an upgrade makes new files.
            parser = os.stat(textual_parse.__file__)
            identity = [_FORMAT, _textual_version(), textual_parse.__file__, parser.st_size, parser.st_mtime_ns,
                        sys.version, sorted(map(list, self._variables.items()))]
            # Only a name: two identities that share one are told apart by the file's content.
            name = f"css-{zlib.crc32(repr(identity).encode()):08x}.json"
            self._file = (self._folder / name, identity)
        return self._file

    def _entries(self) -> dict[tuple, Any]:
        if self._stored is None:
            self._stored = _read(self._path(), self._identity())
        return self._stored


def _textual_version() -> str:
    """The installed Textual's version, from its dist-info folder's name: `textual.__version__`
    imports `importlib.metadata`, which costs more than the cache saves."""
    site = Path(textual.__file__).parent.parent
    with contextlib.suppress(OSError):
        return ",".join(sorted(n for n in os.listdir(site) if n.startswith("textual-") and n.endswith(".dist-info")))
    return ""


def _read(path: Path, identity: Any) -> dict[tuple, Any]:
    """The encoded rules in `path` by key, if it was made for `identity`; else nothing."""
    try:
        data = json.loads(path.read_bytes())
        if data["identity"] != identity:
            return {}
        return {_decode(key): rules for key, rules in data["entries"]}
    except Exception:  # missing, partly written, of an older format, or damaged: parse instead
        return {}


# ---------------------------------------------------------------- the data-only format
#
# Every value that is not a JSON scalar is a list: a tag from `_DECODERS`, then its fields.
# Writing refuses any type outside the table (TypeError), reading any tag outside it (KeyError).


def encode_rules(rules: list[RuleSet]) -> list:
    return [_encode(rule) for rule in rules]


def decode_rules(encoded: list) -> list[RuleSet]:
    rules = [_decode(item) for item in encoded]
    if not all(type(rule) is RuleSet for rule in rules):
        raise ValueError("not a list of rule sets")
    return rules


_NAMED_TUPLES: dict[type, str] = {
    Color: "Color", Scalar: "Scalar", ScalarOffset: "ScalarOffset", Spacing: "Spacing", Transition: "Transition",
}
_ENUMS: dict[type, str] = {Unit: "Unit", SelectorType: "SelectorType", CombinatorType: "CombinatorType"}


def _encode(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is list:
        return ["L", *map(_encode, value)]
    if kind is tuple:
        return ["T", *map(_encode, value)]
    if kind is set:
        return ["S", *map(_encode, sorted(value, key=repr))]
    if kind is dict:
        return ["D", *(_encode(item) for pair in value.items() for item in pair)]
    if kind in _NAMED_TUPLES:
        return [_NAMED_TUPLES[kind], *map(_encode, value)]
    if kind in _ENUMS:
        return [_ENUMS[kind], value.value]
    if kind is Selector:
        return ["Selector", value.name, _encode(value.combinator), _encode(value.type),
                _encode(value.pseudo_classes), _encode(value.specificity), value.advance]
    if kind is SelectorSet:
        return ["SelectorSet", _encode(value.selectors), _encode(value.specificity)]
    if kind is Styles:
        if value.node is not None:
            raise TypeError("styles bound to a node")
        return ["Styles", _encode(value.get_rules()), _encode(value.important)]
    if kind is RuleSet:
        if value.errors:
            raise TypeError("rules with errors")
        return ["RuleSet", _encode(value.selector_set), _encode(value.styles), value.is_default_rules,
                value.tie_breaker, _encode(value.selector_names), _encode(value.pseudo_classes)]
    if isinstance(value, Layout) and type(get_layout(value.name)) is kind:
        return ["Layout", value.name]
    raise TypeError(f"cannot store a {kind.__qualname__}")


def _decode(value: Any) -> Any:
    if type(value) is list:
        return _DECODERS[value[0]](value)
    if value is None or type(value) in (str, int, float, bool):
        return value
    raise ValueError(f"unexpected {type(value).__name__}")


def _items(value: list) -> list:
    return [_decode(item) for item in value[1:]]


def _pairs(value: list) -> dict:
    items = _items(value)
    return dict(zip(items[::2], items[1::2], strict=True))


def _text(value: Any) -> str:
    if type(value) is not str:
        raise ValueError("expected a string")
    return value


def _rule_set(value: list) -> RuleSet:
    _, selector_set, styles, is_default, tie_breaker, names, pseudo = value
    return RuleSet(
        selector_set=_decode(selector_set), styles=_decode(styles), is_default_rules=bool(is_default),
        tie_breaker=int(tie_breaker), selector_names=_decode(names), pseudo_classes=_decode(pseudo),
    )


def _selector(value: list) -> Selector:
    _, name, combinator, kind, pseudo, specificity, advance = value
    selector = Selector(_text(name), _decode(combinator), _decode(kind), _decode(pseudo), _decode(specificity),
                        int(advance))
    # What matching relies on, so a file written by hand cannot make styling fail later.
    if (
        type(selector.combinator) is not CombinatorType
        or type(selector.type) is not SelectorType
        or not _strings(selector.pseudo_classes)
        or not (type(selector.specificity) is tuple and len(selector.specificity) == 3)
    ):
        raise ValueError("not a selector")
    return selector


def _styles(value: list) -> Styles:
    _, rules, important = value
    styles = Styles(_rules=_decode(rules), important=_decode(important))
    if not (type(styles._rules) is dict and _strings(set(styles._rules)) and _strings(styles.important)):
        raise ValueError("not a style")
    return styles


def _strings(value: Any) -> bool:
    return type(value) is set and all(type(item) is str for item in value)


def _named_tuple(cls: type) -> Callable[[list], Any]:
    return lambda value: cls(*_items(value))


def _enum(cls: type[Enum]) -> Callable[[list], Any]:
    members = {member.value: member for member in cls}
    return lambda value: members[value[1]]


_DECODERS: dict[str, Callable[[list], Any]] = {
    "L": _items,
    "T": lambda value: tuple(_items(value)),
    "S": lambda value: set(_items(value)),
    "D": _pairs,
    **{tag: _named_tuple(cls) for cls, tag in _NAMED_TUPLES.items()},
    **{tag: _enum(cls) for cls, tag in _ENUMS.items()},
    "Selector": _selector,
    "SelectorSet": lambda value: SelectorSet(*_items(value)),
    "Styles": _styles,
    "RuleSet": _rule_set,
    "Layout": lambda value: get_layout(_text(value[1])),
}
