"""Shared pytest fixtures.  Keep each fixture in its own clearly marked section."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.loopback import LoopbackServer


# ---------------------------------------------------------------- api: loopback Messages API


@pytest.fixture
def api() -> Iterator[LoopbackServer]:
    """A loopback server speaking the Messages API, scripted per test.

    `api.url` is the base URL for `AnthropicModel(base_url=...)`; script it with
    `api.push(reply(...), status(...), ...)` or `api.handler = fn(body, index)`.
    Unscripted requests get a 500 ("the script ran out").
    """
    with LoopbackServer() as srv:
        yield srv
