"""Serving the view: 127.0.0.1 only, on a free port, printed (and opened in a browser)."""

from __future__ import annotations

import secrets
import socket
import sys
import webbrowser
from dataclasses import replace
from typing import IO

import uvicorn

from pytest_prompteval.view.app import ViewConfig, build_app


def listen(port: int = 0) -> socket.socket:
    """A socket on the loopback interface only; port 0: a free one the system picks."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


def serve(
    config: ViewConfig, port: int = 0, open_browser: bool = True, out: IO[str] = sys.stdout
) -> None:
    # a new token each session: pages of an earlier session cannot write
    config = replace(config, token=secrets.token_urlsafe(32))
    sock = listen(port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    out.write(f"prompteval view: {url} (Ctrl-C stops it)\n")
    out.flush()
    if open_browser:
        webbrowser.open(url)
    server = uvicorn.Server(uvicorn.Config(build_app(config), log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
