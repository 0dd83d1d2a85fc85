"""A request body's bytes, joined from each message's JSON made once (docs/architecture.md §9).

`json.dumps` of a whole body costs time in the size of the history, on every request, and
holds the interpreter all that time.  Here each message is serialised once (looked up by
its identity and place in the history: the request's `HistoryMemo`, engine/memo.py) and the body is the join of the
pieces: the same bytes `json.dumps(body, ensure_ascii=False, separators=(",", ":"))` gives,
so the prefix a request shares with the one before it is byte for byte the same (what
prompt caching reads).  The body is sent as chunks of about 256 KB with its length stated,
never copied into one buffer, and a chunk made of the same pieces as the last body's chunk in
its place is that chunk again: a request copies only what follows the prefix it shares (a
fresh multi-megabyte copy costs a page fault per 4 KB).  Providers call this from a worker
thread, never the event loop's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ..memo import EncodedMemo, PrefixMemo


def dumps(value: Any) -> bytes:
    """Compact JSON with raw UTF-8, as the APIs send it and as requests are sent."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def pieces(
    items: Sequence[Any], memo: PrefixMemo[bytes] | None, encode: Callable[[Any], bytes] = dumps
) -> list[bytes]:
    """Each item's JSON (from `memo` for the items the last request had too); empty pieces left out."""
    return list(filter(None, memo.map(items, encode) if memo is not None else map(encode, items)))


# Pieces are sent in runs of about this many bytes: one multi-megabyte buffer made per request
# costs a page fault per 4 KB on every request, where buffers this size are reused.
CHUNK_BYTES = 256 * 1024


class Body:
    """A request body as the chunks it is sent in (`content` for httpx), their total length,
    and `bytes()` for the whole (tests and logs)."""

    __slots__ = ("chunks", "length")

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.length = sum(map(len, chunks))

    def __bytes__(self) -> bytes:
        return b"".join(self.chunks)

    def content(self) -> bytes | AsyncIterator[bytes]:
        """What httpx's async client sends: the bytes, or the chunks one after the other."""
        if len(self.chunks) == 1:
            return self.chunks[0]

        async def each() -> AsyncIterator[bytes]:
            for chunk in self.chunks:
                yield chunk

        return each()

    def headers(self) -> dict[str, str]:
        # A stated length: the chunks go out as one body, not in HTTP chunked encoding.
        return {"Content-Length": str(self.length)}


def join_body(body: dict[str, Any], key: str, items: list[bytes], memo: EncodedMemo | None = None) -> Body:
    """The bytes of `json.dumps(body)` (compact, raw UTF-8) with `body[key]`, a list, given as
    its elements' JSON: the rest of the body is serialised as usual (it does not grow), and
    the pieces are copied into chunks of about CHUNK_BYTES, the ones `memo` has from the last
    body not again."""
    frags: list[bytes] = []
    for name, value in body.items():
        frags.append(b"," if frags else b"{")
        frags.append(dumps(name) + b":")
        if name != key:
            frags.append(dumps(value))
            continue
        listed = [b","] * (2 * len(items) - 1) if items else []
        listed[0::2] = items
        frags += (b"[", *listed, b"]")
    frags.append(b"}" if frags else b"{}")
    runs = _runs(frags)
    last = memo.chunks if memo is not None else []
    made: list[tuple[tuple[bytes, ...], bytes]] = []
    for n, run in enumerate(runs):
        # Tuples compare item by item, by identity first: a shared prefix's pieces are the
        # same objects, and the few small ones made anew (the keys, `system`) compare equal.
        if n < len(last) and last[n][0] == run:
            made.append(last[n])
        else:
            made.append((run, b"".join(run)))
    if memo is not None:
        memo.chunks = made
    return Body([chunk for _run, chunk in made])


def _runs(frags: list[bytes]) -> list[tuple[bytes, ...]]:
    """`frags` in consecutive runs of about CHUNK_BYTES (a larger fragment is a run alone)."""
    runs: list[tuple[bytes, ...]] = []
    run: list[bytes] = []
    size = 0
    for frag in frags:
        if run and size + len(frag) > CHUNK_BYTES:
            runs.append(tuple(run))
            run, size = [], 0
        run.append(frag)
        size += len(frag)
    runs.append(tuple(run))
    return runs
