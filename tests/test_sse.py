"""The SSE decoder under AnthropicModel: framing as servers send it, split anywhere."""

import pytest

from agent_tui.engine.models.sse import iter_sse

STREAM = (
    b": comment\n"
    b"event: ping\ndata: {\"type\": \"ping\"}\n\n"
    b"event: content_block_delta\ndata: {\"a\":\n"
    b"data:  1}\n\n"
    b"data: only-data\n\n"
    b"event: message_stop\ndata: {}\n\n"
)
EXPECTED = [("ping", '{"type": "ping"}'), ("content_block_delta", '{"a":\n 1}'), (None, "only-data"),
            ("message_stop", "{}")]


async def collect(chunks):
    async def gen():
        for c in chunks:
            yield c

    return [e async for e in iter_sse(gen())]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
async def test_events_survive_any_chunking(size):
    chunks = [STREAM[i:i + size] for i in range(0, len(STREAM), size)]
    assert await collect(chunks) == EXPECTED


@pytest.mark.parametrize("size", [1, 5, 10_000])
async def test_crlf_line_endings_are_accepted(size):
    crlf = STREAM.replace(b"\n", b"\r\n")
    assert await collect([crlf[i:i + size] for i in range(0, len(crlf), size)]) == EXPECTED


async def test_a_final_frame_without_blank_line_is_still_delivered():
    assert await collect([b"event: message_stop\ndata: {}\n"]) == [("message_stop", "{}")]
