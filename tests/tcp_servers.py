"""Real TCP servers on 127.0.0.1 for the tests of clients that must not hang: one that
accepts and never answers, one that answers a fixed reply and closes, and an HTTP server
speaking the chat-completions protocol with scripted replies."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def serving(answer: bytes | None) -> Iterator[int]:
    """A server on a free port (yielded): it accepts every connection, reads the request,
    then answers ``answer`` and closes, or (None) holds the connection and says nothing."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def loop() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            if answer is not None:
                conn.settimeout(5)
                try:
                    conn.recv(65536)
                    conn.sendall(answer)
                finally:
                    conn.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


@dataclass
class ChatReply:
    """What the chat server answers one call: ``content`` as the model's message, else
    HTTP ``status`` with an error body; ``hold``: answer nothing until the server stops
    (a model slower than any client's timeout)."""

    content: str = ""
    status: int = 200
    hold: bool = False


@dataclass
class ChatServer:
    base_url: str
    calls: list[dict[str, Any]] = field(default_factory=list)  # each request body seen
    headers: list[dict[str, str]] = field(default_factory=list)


@contextmanager
def chat_completions(answer: Callable[[dict[str, Any]], ChatReply]) -> Iterator[ChatServer]:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 (a free port): every
    ``POST /v1/chat/completions`` is answered ``answer(its JSON body)``, as the API
    does (``choices[0].message.content``); any other path is a 404."""
    stop = threading.Event()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with lock:
                seen.calls.append(body)
                seen.headers.append(dict(self.headers))
            reply = answer(body) if self.path == "/v1/chat/completions" else ChatReply(status=404)
            if reply.hold:
                stop.wait(30)
                return
            if reply.status != 200:
                data = json.dumps({"error": {"message": "scripted failure"}}).encode()
            else:
                message = {"role": "assistant", "content": reply.content}
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                doc = {"id": "chat-1", "object": "chat.completion", "model": body.get("model")}
                data = json.dumps({**doc, "choices": [choice]}).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: tests read calls, not logs

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    seen = ChatServer(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
