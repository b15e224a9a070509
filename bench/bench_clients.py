"""HTTP clients the benchmarks share, on plain sockets from a chosen loopback address (loopback
is a /8, and the exporter limits connections per client address): a /metrics scrape that checks
the answer is whole, connections held open, GETs read at full speed or slowly, and a crowd of
them in threads. Imported by path: bench/ is the running script's directory."""
import socket
import threading
import time
import zlib


def scrape(port, gzip, timeout=15, source="127.0.0.1", headers=b""):
    """One /metrics answer: (milliseconds, bytes of body received, whole?). Whole: 200, its
    Content-Length arrived, and with gzip the member is complete. `headers`: further header
    lines, each ending in CRLF. A plain socket: http.client's reads took seconds for what curl
    reads in milliseconds."""
    started = time.monotonic()
    body = bytearray()
    promised, status = -1, 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                      source_address=(source, 0)) as connection:
            connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                               + (b"Accept-Encoding: gzip\r\n" if gzip else b"") + headers
                               + b"\r\n")
            received = bytearray()
            while b"\r\n\r\n" not in received:
                data = connection.recv(1 << 16)
                if not data:
                    break
                received += data
            head, _, body = bytes(received).partition(b"\r\n\r\n")
            body = bytearray(body)
            status = int(head.split(b" ", 2)[1]) if head else 0
            for header in head.split(b"\r\n")[1:]:
                name, _, value = header.partition(b":")
                if name.strip().lower() == b"content-length":
                    promised = int(value)
            while len(body) < promised:
                data = connection.recv(1 << 20)
                if not data:
                    break
                body += data
    except (OSError, ValueError, IndexError):
        pass
    elapsed = (time.monotonic() - started) * 1000
    whole = status == 200 and len(body) == promised
    if whole and gzip:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = bytes(body)
        try:
            while not inflater.eof:  # a bounded piece at a time: never held inflated whole
                out = inflater.decompress(data, 1 << 24)
                data = inflater.unconsumed_tail
                if not out and not data:
                    break
        except zlib.error:
            pass
        whole = inflater.eof and not inflater.unused_data
    return elapsed, len(body), whole


def open_connections(port, count, first_line, source="127.0.0.1"):
    """`count` connections from `source` (fewer if refused), each sent `first_line`."""
    held = []
    for _ in range(count):
        try:
            connection = socket.create_connection(("127.0.0.1", port), timeout=5,
                                                  source_address=(source, 0))
            if first_line:
                connection.sendall(first_line)
            held.append(connection)
        except OSError:
            pass
    return held


def fetch(port, path, source, statuses, bytes_per_second=None, seconds=None, sizes=None,
          headers=""):
    """One GET; reads it whole (or at `bytes_per_second` for at most `seconds`). Appends the
    status (or the error's name) to `statuses`, and (bytes after the first read, seconds) to
    `sizes` if given. `headers`: further header lines, each ending in CRLF."""
    started = time.monotonic()
    received = 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=120,
                                      source_address=(source, 0)) as connection:
            if bytes_per_second:
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            connection.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}"
                               "\r\n".encode())
            first = connection.recv(4096)
            statuses.append(first[9:12].decode(errors="replace") if first else "closed")
            end = time.monotonic() + (seconds or 1e9)
            while time.monotonic() < end:
                if bytes_per_second:
                    time.sleep(1)
                chunk = connection.recv(bytes_per_second or 1 << 20)
                if not chunk:
                    break
                received += len(chunk)
    except OSError as error:
        statuses.append(type(error).__name__)
    if sizes is not None:
        sizes.append((received, time.monotonic() - started))


def crowd(port, path, count, sources, **slow):
    """`count` fetches of `path` at once, in threads, from `sources` in turn: (threads,
    statuses). `slow`: fetch's keyword arguments."""
    statuses = []
    threads = [threading.Thread(target=fetch, args=(port, path, sources[i % len(sources)],
                                                    statuses), kwargs=slow)
               for i in range(count)]
    for thread in threads:
        thread.start()
    return threads, statuses


SLOW_MODES = (("-H", "slowloris"), ("-B", "slow body"), ("-X", "slow read"))


def slowhttptest_command(mode, connections, seconds, url, rate=1000):
    """slowhttptest's command line for one of SLOW_MODES: `connections` opened at `rate` a
    second, each sending (or, slow read, reading) a little every 5 s, for `seconds`."""
    command = ["slowhttptest", mode, "-c", str(connections), "-r", str(rate), "-i", "5",
               "-l", str(seconds), "-u", url, "-p", "3"]
    if mode == "-X":
        command += ["-k", "3", "-n", "5", "-w", "1", "-y", "64", "-z", "8"]
    return command


def tally(statuses):
    counts = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{status}: {n}" for status, n in sorted(counts.items()))
