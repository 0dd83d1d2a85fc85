"""WebFetch through the loop against a loopback HTTP site: the page reaches the model as
Markdown; a fetch asks by default, a `WebFetch(domain:…)` rule allows or denies it; a
redirect on the same host is followed and shown, one to another host is not followed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from agent_tui.tools import webfetch
from tests.engine_helpers import Recorder, auto_answer, make_session, tool_results
from tests.loopback import reply, text, tool_use

PAGE = """<!doctype html><html><head><title>Release notes</title><style>h1 {color: red}</style>
<script>track()</script></head><body><h1>Version 2.0</h1>
<p>Adds <b>images</b> and <a href="/docs">the docs</a>.</p><ul><li>faster</li><li>smaller</li></ul></body></html>"""


class Site:
    """A small HTTP site on 127.0.0.1: its pages, and the paths it was asked for."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                site.paths.append(self.path)
                port = self.server.server_address[1]
                routes = {
                    "/notes": (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE.encode()),
                    "/moved": (301, {"Location": "/notes"}, b""),
                    "/elsewhere": (302, {"Location": f"http://localhost:{port}/notes"}, b""),
                    "/big": (200, {"Content-Type": "text/plain"}, b"x" * (webfetch.MAX_MARKDOWN_CHARS + 5000)),
                    "/binary": (200, {"Content-Type": "application/octet-stream"}, b"\0\1\2"),
                }
                code, headers, body = routes.get(self.path, (404, {"Content-Type": "text/plain"}, b"no such page"))
                self.send_response(code)
                for key, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.close()


async def fetch_once(api, tmp_path, url, *, policy=None, answer=None):
    """The model fetches `url` once, then answers; the session's events and the tool's result."""
    api.push(reply(tool_use("WebFetch", {"url": url, "prompt": "What is new?"}, id="w1")), reply(text("Done.")))
    session = make_session(api.url, tmp_path, policy=policy)
    recorder = Recorder(session)
    if answer is not None:
        auto_answer(session, answer)
    try:
        await session.submit("read the release notes")
    finally:
        await session.aclose()
    assert check_history(session.history) == []
    [result] = tool_results(api.requests[1].body)
    return recorder, result


async def test_an_allowed_domain_is_fetched_as_markdown(api, tmp_path, site):
    policy = PermissionPolicy(allow=["WebFetch(domain:127.0.0.1)"])
    recorder, result = await fetch_once(api, tmp_path, f"{site.url}/notes", policy=policy)
    assert not result.get("is_error")
    content = result["content"]
    assert "# Version 2.0" in content
    assert f"Adds **images** and [the docs]({site.url}/docs)." in content  # links made absolute
    assert "- faster\n- smaller" in content
    assert "track()" not in content and "color: red" not in content
    assert content.endswith("Answer from the content above: What is new?")
    assert recorder.of(ev.PermissionRequested) == []
    assert site.paths == ["/notes"]


async def test_a_fetch_asks_by_default_and_proposes_its_domain(api, tmp_path, site):
    recorder, result = await fetch_once(api, tmp_path, f"{site.url}/notes", answer=PermissionAnswer("allow"))
    [asked] = recorder.of(ev.PermissionRequested)
    assert asked.tool_name == "WebFetch" and asked.suggested_rule == "WebFetch(domain:127.0.0.1)"
    assert "# Version 2.0" in result["content"]


async def test_a_denied_domain_is_never_fetched(api, tmp_path, site):
    policy = PermissionPolicy(mode="bypassPermissions", deny=["WebFetch(domain:127.0.0.1)"])
    _, result = await fetch_once(api, tmp_path, f"{site.url}/notes", policy=policy)
    assert result["is_error"] and "WebFetch(domain:127.0.0.1)" in result["content"]
    assert site.paths == []


async def test_a_rule_for_another_domain_does_not_allow(api, tmp_path, site):
    policy = PermissionPolicy(allow=["WebFetch(domain:example.com)"], interactive=False)
    _, result = await fetch_once(api, tmp_path, f"{site.url}/notes", policy=policy)
    assert result["is_error"] and "not granted" in result["content"]
    assert site.paths == []


async def test_a_same_host_redirect_is_followed_and_shown(api, tmp_path, site):
    policy = PermissionPolicy(allow=["WebFetch(domain:127.0.0.1)"])
    recorder, result = await fetch_once(api, tmp_path, f"{site.url}/moved", policy=policy)
    assert f"Redirected: {site.url}/moved -> {site.url}/notes" in result["content"]
    assert "# Version 2.0" in result["content"]
    [finished] = recorder.of(ev.ToolFinished)
    assert finished.data["redirects"] == [[f"{site.url}/moved", f"{site.url}/notes"]]
    assert site.paths == ["/moved", "/notes"]


async def test_a_redirect_to_another_host_is_shown_not_followed(api, tmp_path, site):
    policy = PermissionPolicy(allow=["WebFetch(domain:127.0.0.1)"])
    _, result = await fetch_once(api, tmp_path, f"{site.url}/elsewhere", policy=policy)
    target = site.url.replace("127.0.0.1", "localhost") + "/notes"
    assert "REDIRECT DETECTED" in result["content"]
    assert f"Redirect URL: {target}" in result["content"] and "Status: 302" in result["content"]
    assert site.paths == ["/elsewhere"]  # localhost was not asked: its own rule decides a new fetch


async def test_a_large_page_is_cut_at_the_cap(api, tmp_path, site):
    policy = PermissionPolicy(allow=["WebFetch(domain:127.0.0.1)"])
    _, result = await fetch_once(api, tmp_path, f"{site.url}/big", policy=policy)
    assert f"were cut to {webfetch.MAX_MARKDOWN_CHARS:,}" in result["content"]
    assert result["content"].count("x") <= webfetch.MAX_MARKDOWN_CHARS + 10


async def test_binary_content_and_missing_pages_are_errors(api, tmp_path, site):
    policy = PermissionPolicy(allow=["WebFetch(domain:127.0.0.1)"])
    _, binary = await fetch_once(api, tmp_path, f"{site.url}/binary", policy=policy)
    assert binary["is_error"] and "application/octet-stream" in binary["content"]
    api.requests.clear()
    _, missing = await fetch_once(api, tmp_path, f"{site.url}/nothing", policy=policy)
    assert missing["is_error"] and "404" in missing["content"]


async def test_a_url_that_is_not_http_is_refused_before_asking(api, tmp_path, site):
    recorder, result = await fetch_once(api, tmp_path, "file:///etc/passwd", answer=PermissionAnswer("allow"))
    assert result["is_error"] and "only http:// and https://" in result["content"]
    assert recorder.of(ev.PermissionRequested) == []


async def test_plan_mode_asks_for_a_fetch_rather_than_refusing_it(api, tmp_path, site):
    recorder, result = await fetch_once(api, tmp_path, f"{site.url}/notes", policy=PermissionPolicy(mode="plan"),
                                        answer=PermissionAnswer("allow"))
    assert [e.tool_name for e in recorder.of(ev.PermissionRequested)] == ["WebFetch"]
    assert "# Version 2.0" in result["content"]
    api.requests.clear()
    allowed = PermissionPolicy(mode="plan", allow=["WebFetch(domain:127.0.0.1)"])
    _, again = await fetch_once(api, tmp_path, f"{site.url}/notes", policy=allowed)
    assert "# Version 2.0" in again["content"]
