"""The head of an answer of the local catalogue's HTTP server: its status line and headers.

Every answer starts with one, so what can be is made once: each status's line, and the
``Date`` header once a second.
"""

from __future__ import annotations

import email.utils
import time

from igestbench.mock.http_messages import Response

_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    206: "Partial Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    412: "Precondition Failed",
    413: "Payload Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}

#: Each status's line, made once (every answer starts with one).
_STATUS_LINES = {status: f"HTTP/1.1 {status} {reason}\r\n" for status, reason in _REASONS.items()}


def response_head(response: Response, close: bool, date: bool) -> tuple[bytes, bool]:
    """The status line and headers of ``response``, and whether its body is sent chunked (a
    stream of unknown length). ``close``: the connection closes after it; ``date``: send a
    ``Date`` header."""
    status = response.status
    stream = response.stream
    head = [_STATUS_LINES.get(status) or f"HTTP/1.1 {status} Unknown\r\n"]
    if response.content_type is not None:
        head.append(f"Content-Type: {response.content_type}\r\n")
    # a HEAD answer has the headers of the GET answer, its Content-Length too, no body;
    # a 204 has no Content-Length at all (RFC 9110 8.6, and so ICAT's REST front answers)
    chunked = stream is not None and response.length is None
    if chunked:
        head.append("Transfer-Encoding: chunked\r\n")
    elif stream is not None:
        head.append(f"Content-Length: {response.length}\r\n")
    elif status != 204:
        head.append(f"Content-Length: {len(response.body)}\r\n")
    head.append("Server: sv7-local-catalogue\r\n")
    # RFC 9110 6.6.1: a server with a clock sends one (cleanup reads the run's start here);
    # Payara, as a real ICAT 6.2.0 runs it, does not
    if date:
        head.append(_date_header())
    head += [f"{k}: {v}\r\n" for k, v in response.headers.items()]
    head.append("Connection: close\r\n\r\n" if close else "\r\n")
    return "".join(head).encode("latin-1"), chunked


_date: tuple[int, str] = (0, "")


def _date_header() -> str:
    """``Date: …\\r\\n`` of this second, formatted once a second (sent with every answer)."""
    global _date
    now = int(time.time())
    second, text = _date
    if second != now:
        text = f"Date: {email.utils.formatdate(now, usegmt=True)}\r\n"
        _date = (now, text)
    return text
