"""Shared pytest fixtures.  Keep each fixture in its own clearly marked section."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# Imported here, at a shallow stack: CPython 3.11.7's parser raises "AST constructor
# recursion depth mismatch" when hypothesis imports its optimiser lazily deep inside a test.
from hypothesis.internal.conjecture import optimiser as _optimiser  # noqa: F401

from tests.counting import COUNTS
from tests.loopback import LoopbackServer

# ---------------------------------------------------------------- hypothesis profiles
# dev: a quick local run; ci: the default CI run; thorough: the `-m "slow or property"` CI pass.
_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=40, **_COMMON)
settings.register_profile("ci", max_examples=100, database=None, print_blob=True, **_COMMON)
settings.register_profile("thorough", max_examples=600, database=None, print_blob=True, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_report_header(config: pytest.Config) -> str:
    return f"hypothesis profile: {settings.get_current_profile_name()} (max_examples={settings.default.max_examples})"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Under xdist each worker counts its own cases; hand them to the controller, which prints them.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["generated_cases"] = dict(COUNTS)
    _collect_then_freeze()


def _collect_then_freeze(rounds: int = 5) -> None:
    """Collect the session's garbage now (its finalizers run, an unraisable exception is still
    reported), then set the survivors aside.  pytest's own closing check runs five full
    collections; over a worker's ~600k live objects on a loaded 2-core machine that took more
    than the 5 s execnet allows a finished worker, and execnet then SIGINTs it.  Here the
    collections run before the worker reports that it has finished, and the later five only
    walk what is left."""
    for _ in range(rounds):
        if not gc.collect():
            break
    gc.freeze()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    COUNTS.update(getattr(node, "workeroutput", {}).get("generated_cases", {}))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if COUNTS:
        rows = ", ".join(f"{label}: {n:,}" for label, n in sorted(COUNTS.items()))
        terminalreporter.write_line(f"generated cases ({settings.get_current_profile_name()} profile): {rows}")


# ---------------------------------------------------------------- isolation: user data and config dirs


@pytest.fixture(autouse=True, scope="session")
def isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Transcripts, user settings and user memory go to temporary folders, never the
    real user dirs, and the developer's own AGENT_TUI_* settings variables are ignored.
    (Subprocesses inherit this environment.)"""
    from agent_tui.config import ENV_VARS

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENT_TUI_DATA_DIR", str(tmp_path_factory.mktemp("user-data")))
        mp.setenv("AGENT_TUI_CONFIG_DIR", str(tmp_path_factory.mktemp("user-config")))
        mp.setenv("AGENT_TUI_CACHE_DIR", str(tmp_path_factory.mktemp("user-cache")))
        for var, _key in ENV_VARS:
            if var.startswith("AGENT_TUI_"):
                mp.delenv(var, raising=False)
        # About a hundred tests start the `agent-tui` script: let the first child cache the
        # package's bytecode (as any default Python does) so the rest don't recompile it.
        mp.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        # xdist workers get COLUMNS=80 LINES=24, which Textual would take over a resized terminal's size.
        mp.delenv("COLUMNS", raising=False)
        mp.delenv("LINES", raising=False)
        yield


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
