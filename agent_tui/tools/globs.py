"""Shell / gitignore globs as regular expressions, shared by Glob and the permission rules."""

from __future__ import annotations

import re


def glob_to_regex(glob: str, *, braces: bool = False) -> str:
    """A regex (to `fullmatch` a `/`-separated relative path) for `glob`.

    `*` and `?` stay within one folder, `**/` spans any number of folders, `**`
    matches anything, `[...]` / `[!...]` are classes; with `braces`, `{a,b}`
    alternates as in bash (gitignore-style rules have no braces).
    """
    out: list[str] = []
    i, n, depth = 0, len(glob), 0
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            # A `]` right after `[` or `[!` is a member of the class, not its end (`[!]]`, `[]a]`).
            first = i + 2 if glob.startswith("[!", i) else i + 1
            end = glob.find("]", first + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end]
                body = "^" + body[1:] if body.startswith("!") else body
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif braces and c == "{":
            out.append("(?:")
            depth += 1
        elif braces and c == "}" and depth:
            out.append(")")
            depth -= 1
        elif braces and c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_literal(glob: str) -> str:
    """The longest run of characters every path `glob` matches must hold ("" for none): `**/`,
    `**`, `*`, `?` and `[...]` break runs, as `glob_to_regex` reads them (no braces)."""
    runs, run = [], ""
    i, n = 0, len(glob)
    while i < n:
        end = glob.find("]", i + 2) if glob[i] == "[" else -1
        if glob[i] in "*?" or end != -1:
            runs.append(run)
            run = ""
            i = end + 1 if end != -1 else i + 1
            while i < n and glob[i] == "*":
                i += 1
            if glob.startswith("/", i) and glob[i - 2:i] == "**":
                i += 1  # `**/` may match nothing, its slash too
            continue
        run += glob[i]
        i += 1
    runs.append(run)
    return max(runs, key=len)
