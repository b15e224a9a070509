"""The loopback HTTP(S) server the tests' fake APIs stand on, and their TLS set-up.

A fake API (fake_github.py, fake_gitlab.py, fake_apiserver.py, ...) is its state and one function
from a Request to an answer (status, headers, body); serve() runs it on loopback on a free port,
over TLS when given a certificate. A body that is an iterator of bytes is streamed (a Kubernetes
watch, a slow drip); None drops the connection unanswered. make_pki() writes the one test PKI
they all use. page() and link() cut a list into pages and name them the way GitHub and GitLab do.
"""
import json
import os
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections import namedtuple
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from schedwatch_test import make_ca, make_leaf

# headers: lower-cased names; body: bytes; base: the server's own scheme://host:port, for the
# links an answer holds; client_cn: the CN of the client's certificate (None without one);
# raw_headers: as sent (http.client.HTTPMessage: original case, case-insensitive get).
Request = namedtuple("Request", "method path query headers body base client_cn client_port "
                     "raw_headers", defaults=(None, None, None))


def make_pki(directory, days=3650):
    """directory/ca.{crt,key}, server.{crt,key} (localhost, 127.0.0.1, ::1), client.{crt,key}
    (CN schedwatch-client, signed by the same CA) and other-ca.crt (an unrelated CA), kept when
    there already. Returns the paths of the CA, the server's certificate and its key."""
    paths = tuple(os.path.join(directory, name) for name in ("ca.crt", "server.crt", "server.key"))
    if not os.path.exists(os.path.join(directory, "client.crt")):
        for name in ("ca", "other-ca"):
            make_ca(directory, name, days=days)
        make_leaf(directory, "server", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n"
                  "extendedKeyUsage=serverAuth\n", subject="/CN=localhost", days=days)
        make_leaf(directory, "client", "ca", "extendedKeyUsage=clientAuth\n",
                  subject="/CN=schedwatch-client", days=days)
    return paths


class RequestLog:
    """Every request a fake answered, as dicts, safe across the server's threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entries = []

    def add(self, entry):
        with self.lock:
            self.entries.append(entry)

    def __iter__(self):
        with self.lock:
            return iter(list(self.entries))

    def select(self, **match):
        """The entries whose keys have the given values (a callable value: a test of it)."""
        with self.lock:
            return [e for e in self.entries if all(
                value(e.get(key)) if callable(value) else e.get(key) == value
                for key, value in match.items())]


def tls_context(cert, key, client_ca=None):
    """A server's TLS context; with client_ca, a client certificate it signed is asked for (and
    checked when given), none required."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class LoopbackServer(ThreadingHTTPServer):
    """A threading HTTP server, over TLS when given a context. The handshake happens in the
    request's own thread, so a stalled or hostile client stalls only itself; aborted handshakes
    and dropped connections are part of the tests, not errors."""
    daemon_threads = True

    def __init__(self, handler, host="127.0.0.1", ssl_context=None):
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, 0), handler)
        self.ssl_context = ssl_context
        scheme = "https" if ssl_context else "http"
        self.url = f"{scheme}://{f'[{host}]' if ':' in host else host}:{self.server_address[1]}"
        self.stopping = threading.Event()
        self.streams = set()  # the connections of the answers being streamed
        self.streams_lock = threading.Lock()

    def stop(self):
        """Stops accepting and ends the open streams: their clients see the connection close,
        their iterators are closed. shutdown() alone leaves streams running."""
        self.stopping.set()
        self.shutdown()
        self.server_close()
        with self.streams_lock:
            for connection in self.streams:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def get_request(self):
        connection, address = self.socket.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.ssl_context is not None:
            connection = self.ssl_context.wrap_socket(connection, server_side=True,
                                                      do_handshake_on_connect=False)
        return connection, address

    def handle_error(self, request, client_address):
        pass


def peer_gone(connection):
    """Whether the client closed (or wrote on) a connection it should only be reading from."""
    if not select.select([connection], [], [], 0)[0]:
        return False
    timeout = connection.gettimeout()
    connection.settimeout(0)
    try:
        connection.recv(1)  # b"": closed; data: a client that no longer reads the stream
        return True
    except (ssl.SSLWantReadError, BlockingIOError):
        return False  # part of a TLS record, nothing said yet
    except OSError:
        return True
    finally:
        connection.settimeout(timeout)


def serve(answer, tls_cert=None, tls_key=None, delay=0.0, client_ca=None, host="127.0.0.1"):
    """A threading server on `host` and a free port answering every request with
    answer(Request) -> (status, headers, body), `delay` seconds late (a slow peer). A body that
    is not bytes is an iterator of bytes, each sent as a chunk at once (chunked transfer
    encoding); an empty one sends nothing but lets the server notice a client that left or a
    stop(), which close the iterator. An answer of None closes the connection without one.
    With client_ca, client certificates it signed are accepted (Request.client_cn). Returns the
    http.server object (server_address, url, stop())."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs
        wbufsize = -1  # one write per response: fewer TLS records, no delayed-ACK waits

        def reply(self):
            url = urllib.parse.urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            length = int(headers.get("content-length", 0) or 0)
            body = self.rfile.read(length) if length else b""
            if delay:
                time.sleep(delay)
            answered = answer(Request(
                self.command, url.path, dict(urllib.parse.parse_qsl(url.query)), headers, body,
                server.url, client_cn(self.connection), self.client_address[1], self.headers))
            if answered is None:
                self.close_connection = True
                return
            status, reply_headers, reply = answered
            self.send_response(status)
            reply_headers = dict(reply_headers)
            reply_headers.setdefault("content-type", "application/json")
            for name, value in reply_headers.items():
                self.send_header(name, value)
            if not isinstance(reply, (bytes, bytearray)):
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                return self.stream(reply)
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def stream(self, chunks):
            with server.streams_lock:
                server.streams.add(self.connection)
            ended = False
            try:
                if self.write_now(b""):  # the headers, before the first chunk is ready
                    for chunk in chunks:
                        going = (self.write_now(b"%x\r\n%s\r\n" % (len(chunk), chunk)) if chunk
                                 else not peer_gone(self.connection))
                        if not going or server.stopping.is_set():
                            break
                    else:
                        ended = self.write_now(b"0\r\n\r\n")
            finally:
                if hasattr(chunks, "close"):
                    chunks.close()
                with server.streams_lock:
                    server.streams.discard(self.connection)
                self.close_connection = self.close_connection or not ended

        def write_now(self, data):
            """Writes at once; False when the client has left."""
            try:
                self.wfile.write(data)
                self.wfile.flush()
                return True
            except (OSError, ValueError):  # ValueError: a file closed by stop()
                return False

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = reply  # noqa: N815 -- http.server's

        def log_message(self, *args):
            pass

    context = tls_context(tls_cert, tls_key, client_ca) if tls_cert else None
    server = LoopbackServer(Handler, host, context)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                     daemon=True).start()
    return server


def client_cn(connection):
    """The common name of the client certificate a TLS connection presented, or None."""
    try:
        certificate = connection.getpeercert()
    except (AttributeError, ValueError):
        return None
    for field in (certificate or {}).get("subject", ()):
        for key, value in field:
            if key == "commonName":
                return value
    return None


def page(items, number, per_page):
    """Page `number` (from 1) of `items` and how many pages there are (at least 1)."""
    return items[(number - 1) * per_page:number * per_page], max(1, -(-len(items) // per_page))


def link(base, path, query, number, per_page, rel):
    """One entry of a Link header: the same query on page `number`."""
    params = dict(query, per_page=str(per_page), page=str(number))
    return f'<{base}{path}?{urllib.parse.urlencode(params)}>; rel="{rel}"'


def json_answer(status, payload, headers=None):
    return status, dict(headers or {}), json.dumps(payload).encode()
