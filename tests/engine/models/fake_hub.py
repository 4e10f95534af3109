"""A loopback HTTP server that answers like the Hugging Face hub's file endpoint, so downloads are tested for real
(huggingface_hub's own client, headers, .incomplete files, resume) without network.

It serves `HEAD|GET /{org}/{name}/resolve/{revision}/{file}` with the headers `hf_hub_download` reads: `X-Repo-Commit`,
`ETag` / `X-Linked-Etag` (the sha256, as for LFS files), `Content-Length`; honours `Range`; and can be told to fail
the next requests (HTTP status or a connection cut mid-body)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class HubFile:
    body: bytes
    #: The etag announced; defaults to the body's sha256. Set it to something else to fake a corrupted transfer.
    etag: str | None = None

    def announced_etag(self) -> str:
        return self.etag or hashlib.sha256(self.body).hexdigest()


@dataclass
class FakeHub:
    files: dict[str, HubFile] = field(default_factory=dict)  # "org/name/file" → file
    #: Statuses to answer to the next requests, in order (then normal service).
    fail_next: list[int] = field(default_factory=list)
    #: Cut the connection after this many body bytes on every GET (None: serve whole bodies).
    cut_after: int | None = None
    requests: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""

    def add(self, repo: str, file: str, body: bytes, etag: str | None = None) -> None:
        self.files[f"{repo}/{file}"] = HubFile(body, etag)


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def _lookup(self) -> HubFile | None:
            parts = self.path.split("?")[0].lstrip("/").split("/")
            # org / name / resolve / revision / file...
            if len(parts) < 5 or parts[2] != "resolve":
                return None
            return hub.files.get("/".join(parts[:2] + parts[4:]))

        def _send_error(self, status: int) -> None:
            body = b'{"error": "fake hub error"}'
            self.send_response(status)
            if status == 404:
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("X-Error-Message", "Entry not found")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _serve(self) -> None:
            hub.requests.append((self.command, self.path))
            if hub.fail_next:
                self._send_error(hub.fail_next.pop(0))
                return
            entry = self._lookup()
            if entry is None:
                self._send_error(404)
                return
            body = entry.body
            start = 0
            range_header = self.headers.get("Range")
            if range_header and range_header.startswith("bytes=") and self.command == "GET":
                start = int(range_header[len("bytes="):].split("-")[0] or 0)
            chunk = body[start:]
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{entry.announced_etag()}"')
            self.send_header("X-Linked-Etag", f'"{entry.announced_etag()}"')
            self.send_header("X-Linked-Size", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(chunk) if self.command == "GET" else len(body)))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.end_headers()
            if self.command == "GET":
                if hub.cut_after is not None:
                    self.wfile.write(chunk[:hub.cut_after])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(chunk)

        do_GET = _serve
        do_HEAD = _serve

    return Handler


class FakeHubServer:
    """Context manager: starts the hub on 127.0.0.1 with a free port, stops it on exit."""

    def __init__(self, hub: FakeHub | None = None):
        self.hub = hub or FakeHub()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.hub))
        self._server.daemon_threads = True
        self.hub.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-hub",
                                        daemon=True)

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self.hub

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
