#!/usr/bin/python3
"""fake_http.serve() streaming answers, over plain HTTP and TLS (with a client certificate):

- a body that is an iterator of bytes arrives chunk by chunk, as it is made, chunked; the
  connection then serves the next request (keep-alive);
- a client that leaves mid-stream, while chunks flow and while the stream is silent (only
  empty chunks), closes the iterator;
- stop() with a stream open: the client sees the connection end, the iterator is closed;
- an answer of None closes the connection unanswered.
Prints 'N passed, N failed'.
"""
import http.client
import os
import socket
import ssl
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_http  # noqa: E402
from schedwatch_test import check, run_in_temporary_directory, wait_for  # noqa: E402


class Streams:
    """The answers: /three (three chunks, 0.1 s apart), /ticks (a chunk every 20 ms for ever),
    /silent (one chunk, then only empty ones), /drop (None). Counts the iterators closed."""

    def __init__(self):
        self.closed = {}
        self.lock = threading.Lock()
        self.seen = []

    def answer(self, request):
        self.seen.append(request)
        if request.path == "/drop":
            return None
        return 200, {"content-type": "text/plain"}, self.chunks(request.path)

    def chunks(self, path):
        try:
            if path == "/three":
                for i in range(3):
                    yield b"chunk %d\n" % i
                    time.sleep(0.1)
                return
            yield b"first\n"
            while True:
                time.sleep(0.02)
                yield b"tick\n" if path == "/ticks" else b""
        finally:
            with self.lock:
                self.closed[path] = self.closed.get(path, 0) + 1

    def closed_count(self, path):
        with self.lock:
            return self.closed.get(path, 0)


def connect(server, pki):
    host, port = server.server_address[:2]
    if not server.url.startswith("https"):
        return http.client.HTTPConnection(host, port, timeout=10)
    context = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
    context.load_cert_chain(os.path.join(pki, "client.crt"), os.path.join(pki, "client.key"))
    return http.client.HTTPSConnection("localhost", port, timeout=10, context=context)


def run_checks(name, server, streams, pki):
    connection = connect(server, pki)
    connection.request("GET", "/three")
    response = connection.getresponse()
    first = response.read1()
    arrivals = [time.monotonic()]
    body = first
    while True:
        piece = response.read1()
        if not piece:
            break
        arrivals.append(time.monotonic())
        body += piece
    check(f"{name}: a streamed answer is chunked and whole",
          response.getheader("transfer-encoding") == "chunked"
          and body == b"chunk 0\nchunk 1\nchunk 2\n", (response.headers, body))
    check(f"{name}: each chunk arrives as it is made", first == b"chunk 0\n"
          and arrivals[-1] - arrivals[0] >= 0.15, (first, arrivals))
    connection.request("GET", "/three")
    again = connection.getresponse()
    check(f"{name}: the connection serves the next request", again.read().startswith(b"chunk 0"))
    connection.close()
    if pki:
        check(f"{name}: the client certificate's CN is in the request",
              streams.seen[-1].client_cn == "schedwatch-client", streams.seen[-1])

    for path in ("/ticks", "/silent"):
        connection = connect(server, pki)
        connection.request("GET", path)
        response = connection.getresponse()
        got = response.read1()
        connection.sock.close()
        connection.close()
        check(f"{name}: a client leaving {path} mid-stream closes its iterator",
              got.startswith(b"first") and wait_for(lambda: streams.closed_count(path), 5,
                                                    f"{path} closed"), got)

    connection = connect(server, pki)
    connection.request("GET", "/drop")
    try:
        dropped = connection.getresponse().status
    except (http.client.RemoteDisconnected, ConnectionResetError) as error:
        dropped = type(error).__name__
    check(f"{name}: None drops the connection unanswered", dropped in (
        "RemoteDisconnected", "ConnectionResetError"), dropped)
    connection.close()

    connection = connect(server, pki)
    connection.request("GET", "/silent")
    response = connection.getresponse()
    response.read1()
    before = streams.closed_count("/silent")
    started = time.monotonic()
    server.stop()
    try:
        rest = response.read()
    except http.client.IncompleteRead as error:
        rest = error.partial
    except socket.timeout as error:  # the stream outlived the server
        rest = error
    check(f"{name}: stop() ends an open stream", rest == b"" and time.monotonic() - started < 5,
          (rest, time.monotonic() - started))
    check(f"{name}: stop() closes its iterator", wait_for(
        lambda: streams.closed_count("/silent") > before, 5, "the iterator closed"))
    connection.close()


def run(args, workdir):
    streams = Streams()
    run_checks("http", fake_http.serve(streams.answer), streams, None)
    pki = os.path.join(workdir, "pki")
    os.mkdir(pki)
    cert_paths = fake_http.make_pki(pki)
    tls = Streams()
    run_checks("https", fake_http.serve(tls.answer, cert_paths[1], cert_paths[2],
                                        client_ca=cert_paths[0]), tls, pki)


if __name__ == "__main__":
    sys.exit(run_in_temporary_directory("schedwatch-fake-http-", run))
