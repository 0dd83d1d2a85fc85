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
            end = glob.find("]", i + 2)
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
