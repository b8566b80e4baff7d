"""Serving the app: a threaded WSGI server on 127.0.0.1 by default, startable in a thread (tests, bench)."""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import webbrowser
from typing import Any

from werkzeug.serving import make_server

from ..errors import ConfigError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class DashboardServer:
    """`DashboardServer(app, host, port).start()` serves in a background thread; `port=0` picks a free port."""

    def __init__(self, app: Any, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, quiet: bool = True):
        server = getattr(app, "server", app)
        if quiet:
            logging.getLogger("werkzeug").setLevel(logging.WARNING)
        try:
            self._srv = make_server(host, port, server, threaded=True)
        except OSError as e:
            raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
        except socket.gaierror as e:
            raise ConfigError(f"cannot resolve host {host!r}: {e}") from None
        self.host = host
        self.port = int(self._srv.server_port)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def start(self) -> DashboardServer:
        self._thread = threading.Thread(target=self._srv.serve_forever, name="trajlab-dash", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._srv.serve_forever()

    def stop(self) -> None:
        self._srv.shutdown()
        self._srv.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> DashboardServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(app: Any, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, open_browser: bool = False) -> None:
    """Serve until interrupted (Ctrl-C), optionally opening the default browser on the app."""
    srv = DashboardServer(app, host, port)
    if open_browser:
        threading.Timer(0.5, lambda: webbrowser.open(srv.url)).start()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv._srv.server_close()
