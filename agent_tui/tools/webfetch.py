"""WebFetch {url, prompt}: a web page as Markdown for the model, with Claude Code's schema.

The page is fetched with httpx2 (timeouts, a body cap), HTML is turned into
Markdown with markdownify, and the model gets the Markdown with its prompt after
it.  (Claude Code runs the prompt through a small model first; here the main
model reads the page itself, capped at `MAX_MARKDOWN_CHARS`.)

Redirects are followed only on the same host, at most `MAX_REDIRECTS`, and the
result says where it went.  A redirect to another host is not followed: the
model is told the new URL and must fetch it again, so the permission rules
(`WebFetch(domain:host)`, engine/permissions/rules.py) see the host it goes to.
The tool is not read-only: every fetch asks unless a rule allows its domain.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from agent_tui import __version__
from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult, one_line
from agent_tui.tools.media import ImageError, image_block

MAX_URL_CHARS = 2000
MAX_REDIRECTS = 5
# What is read of a body at most; the rest is not downloaded.
MAX_BODY_BYTES = 10 * 1024 * 1024
# What the model reads of the page at most (the generic tool-result cap).
MAX_MARKDOWN_CHARS = 100_000
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0
USER_AGENT = f"agent-tui/{__version__} (WebFetch)"
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/javascript")

DESCRIPTION = """\
- Fetches content from a specified URL and returns it for you to answer a prompt from
- Takes a URL and a prompt as input
- Fetches the URL content, converts HTML to markdown
- Returns the page as markdown, followed by the prompt to answer from it
- Use this tool when you need to retrieve and analyze web content

Usage notes:
  - The URL must be a fully-formed valid URL (http:// or https://)
  - The prompt should describe what information you want to extract from the page
  - This tool is read-only and does not modify any files
  - Results may be truncated if the content is very large
  - When a URL redirects to a different host, the tool will inform you and provide the redirect URL. \
You should then make a new WebFetch request with the redirect URL to fetch the content."""


class FetchError(Exception):
    """A fetch that produced no page; the message is the tool result text."""


@dataclass
class Fetched:
    url: str
    status: int
    reason: str
    content_type: str
    body: bytes
    truncated: bool
    # Each redirect followed, as (from, to).
    redirects: list[tuple[str, str]] = field(default_factory=list)
    # A redirect to another host, not followed: (from, to, status).
    offsite: tuple[str, str, int] | None = None


class WebFetchTool(BaseTool):
    name = "WebFetch"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "format": "uri", "description": "The URL to fetch content from"},
            "prompt": {"type": "string", "description": "The prompt to run on the fetched content"},
        },
        "required": ["url", "prompt"],
        "additionalProperties": False,
    }

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return True

    def summarize(self, input: dict[str, Any]) -> str:
        return one_line(str(input.get("url", "")), 80)

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        return url_problem(input["url"])

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        url = input["url"]
        yield Progress(f"Fetching {url}")
        try:
            fetched = await fetch(url)
        except FetchError as exc:
            yield ToolResult(str(exc), is_error=True, data={"url": url})
            return
        # Markdown conversion of a large page takes a while: off the event loop.
        yield await asyncio.to_thread(_result, fetched, input["prompt"])


def url_problem(url: str) -> str | None:
    """Why `url` cannot be fetched, or None."""
    if len(url) > MAX_URL_CHARS:
        return f"The URL is {len(url)} characters long; at most {MAX_URL_CHARS} are fetched."
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"Invalid URL {url!r}: only http:// and https:// URLs with a host can be fetched."
    if parts.username or parts.password:
        return "URLs with a user name or password are not fetched."
    return None


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _same_site(a: str, b: str) -> bool:
    """The same host, or one is the other with `www.` (a redirect worth following)."""
    a, b = a.removeprefix("www."), b.removeprefix("www.")
    return a == b


async def fetch(url: str) -> Fetched:
    """GET `url`, following same-host redirects, the body read up to MAX_BODY_BYTES."""
    import httpx2

    timeout = httpx2.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)
    headers = {"User-Agent": USER_AGENT, "Accept": "text/markdown, text/html;q=0.9, */*;q=0.8"}
    redirects: list[tuple[str, str]] = []
    async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False, headers=headers) as client:
        current = url
        while True:
            try:
                async with client.stream("GET", current) as response:
                    if response.is_redirect and "location" in response.headers:
                        target = urljoin(current, response.headers["location"])
                        if not _same_site(host_of(current), host_of(target)) or url_problem(target):
                            return _page(response, current, b"", False, redirects, (current, target))
                        if len(redirects) >= MAX_REDIRECTS:
                            raise FetchError(f"Too many redirects (more than {MAX_REDIRECTS}) fetching {url}.")
                        redirects.append((current, target))
                        current = target
                        continue
                    body, truncated = await _read_body(response)
                    return _page(response, current, body, truncated, redirects, None)
            except httpx2.TimeoutException as exc:
                raise FetchError(f"Fetching {current} timed out ({type(exc).__name__}).") from exc
            except httpx2.HTTPError as exc:
                raise FetchError(f"Fetching {current} failed: {exc or type(exc).__name__}") from exc


def _page(response: Any, url: str, body: bytes, truncated: bool, redirects: list[tuple[str, str]],
          offsite: tuple[str, str] | None) -> Fetched:
    return Fetched(
        url=url,
        status=response.status_code,
        reason=response.reason_phrase,
        content_type=response.headers.get("content-type", ""),
        body=body,
        truncated=truncated,
        redirects=redirects,
        offsite=(*offsite, response.status_code) if offsite is not None else None,
    )


async def _read_body(response: Any) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"".join(chunks)[:MAX_BODY_BYTES], True
    return b"".join(chunks), False


def _result(fetched: Fetched, prompt: str) -> ToolResult:
    data: dict[str, Any] = {
        "url": fetched.url,
        "status": fetched.status,
        "content_type": fetched.content_type,
        "redirects": [list(r) for r in fetched.redirects],
        "bytes": len(fetched.body),
    }
    route = "".join(f"Redirected: {a} -> {b}\n" for a, b in fetched.redirects)
    if fetched.offsite is not None:
        origin, target, status = fetched.offsite
        data["redirect"] = target
        text = (
            f"{route}REDIRECT DETECTED: The URL redirects to a different host.\n\n"
            f"Original URL: {origin}\nRedirect URL: {target}\nStatus: {status}\n\n"
            "To complete your request, fetch the content from the redirected URL: use WebFetch again with "
            f'url: "{target}" and prompt: "{prompt}".'
        )
        return ToolResult(text, data=data)
    mime = fetched.content_type.split(";", 1)[0].strip().lower()
    if mime.startswith("image/"):
        try:
            image = image_block(fetched.body, fetched.url)
        except ImageError as exc:
            return ToolResult(f"{route}{fetched.url} is an image that cannot be sent: {exc}.", is_error=True, data=data)
        data["media"] = image.describe()
        return ToolResult([{"type": "text", "text": f"{route}Image fetched from {fetched.url}"}, image.block],
                          data=data)
    if mime and not mime.startswith(_TEXT_TYPES):
        return ToolResult(
            f"{route}{fetched.url} returned {fetched.content_type or 'binary content'} "
            f"({len(fetched.body):,} bytes), which is not a page that can be read as text.",
            is_error=True, data=data,
        )
    text = fetched.body.decode(_charset(fetched.content_type), "replace")
    is_html = mime in ("text/html", "application/xhtml+xml") or _looks_html(mime, text)
    markdown = to_markdown(text, fetched.url) if is_html else text
    notes = []
    if fetched.truncated:
        notes.append(f"only the first {MAX_BODY_BYTES // (1024 * 1024)} MB of the page was downloaded")
    if len(markdown) > MAX_MARKDOWN_CHARS:
        notes.append(f"the page's {len(markdown):,} characters were cut to {MAX_MARKDOWN_CHARS:,}")
        markdown = markdown[:MAX_MARKDOWN_CHARS]
    data["chars"] = len(markdown)
    status = f"{fetched.status} {fetched.reason}".strip()
    head = f"{route}URL: {fetched.url}\nStatus: {status}\n"
    if notes:
        head += f"Note: {'; '.join(notes)}.\n"
    body = f"{head}\n{markdown.strip()}\n\n---\nAnswer from the content above: {prompt}"
    return ToolResult(body, is_error=fetched.status >= 400, data=data)


def _charset(content_type: str) -> str:
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            name = value.strip().strip('"')
            try:
                "".encode(name)
            except LookupError:
                break
            return name
    return "utf-8"


def _looks_html(mime: str, text: str) -> bool:
    return not mime and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))


def to_markdown(html: str, base_url: str = "") -> str:
    """HTML as Markdown (script and style dropped, links and images made absolute against
    `base_url` so the model can fetch them), runs of blank lines folded."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    if base_url:
        for tag, attr in (("a", "href"), ("img", "src")):
            for element in soup.find_all(tag, attrs={attr: True}):
                value = str(element[attr])
                if not value.startswith(("#", "mailto:", "javascript:", "data:")):
                    element[attr] = urljoin(base_url, value)
    markdown = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    lines = [line.rstrip() for line in markdown.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out)
