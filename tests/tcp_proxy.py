"""A TCP proxy in front of the broker that a test can cut, refuse or freeze, as outages would."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class TcpProxy:
    """Forward 127.0.0.1:<port> to a target, with switches to cut, refuse and freeze connections."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.refusing = False  # accept, then close at once
        self.frozen = False  # stop forwarding bytes either way (a stalled network)
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.1)
        self.port = self._server.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._accept_forever, daemon=True).start()

    def _accept_forever(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            self._forward(client)

    def _forward(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=2)
        except OSError:
            client.close()
            return
        for sock in (client, upstream):
            sock.settimeout(None)
        with self._lock:
            self._sockets += [client, upstream]
        threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                while self.frozen and not self._stopped:
                    time.sleep(0.01)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                close_socket(sock)

    def cut(self) -> None:
        """Drop every live connection, as a broker restart or a network failure would."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            close_socket(sock)

    def close(self) -> None:
        self._stopped = True
        self._server.close()
        self.cut()


def close_socket(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
