"""Real TCP servers on 127.0.0.1 for the tests of clients that must not hang: one that
accepts and never answers, one that answers a fixed reply and closes."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


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
