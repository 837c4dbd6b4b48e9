"""A tiny HTTP server on 127.0.0.1 that serves in-memory files and honours `Range: bytes=N-`.

Shared by the download and WMT problem tests. Options make it misbehave on purpose: ignore Range
requests, cut a response short (to exercise resume after a dropped connection), or omit
Content-Length and just stream until it closes the connection.
"""
import http.server
import threading


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):  # noqa: N802 (http.server naming)
        server = self.server
        server.requests.append((self.path, self.headers.get("Range")))
        body = server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        range_header = self.headers.get("Range")
        if range_header and server.honour_range:
            start = int(range_header.split("=", 1)[1].split("-", 1)[0])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        payload = body[start:]
        if server.omit_length:  # the body ends when the connection closes
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        cut = server.cut_after.pop(self.path, None)
        if cut is not None:  # promise everything, deliver a prefix, hang up
            self.wfile.write(payload[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        try:
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: its right
            pass


class LocalServer:
    """Context manager: `with LocalServer({"/a.tgz": data}) as srv: srv.url("/a.tgz")`."""

    def __init__(self, files: dict, honour_range: bool = True, omit_length: bool = False):
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.files = dict(files)
        self._httpd.honour_range = honour_range
        self._httpd.omit_length = omit_length
        self._httpd.requests = []
        self._httpd.cut_after = {}
        # A short poll keeps shutdown() quick: serve_forever checks for it only between polls.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def requests(self):
        """(path, Range header or None) for each request received, in order."""
        return self._httpd.requests

    @property
    def files(self):
        return self._httpd.files

    def cut_next_response(self, path: str, after_bytes: int) -> None:
        self._httpd.cut_after[path] = after_bytes

    def url(self, path: str) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}{path}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
