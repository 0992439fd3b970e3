#!/usr/bin/env python3
"""Measures issue 7's "done when" against a running `dispatch-dash serve`
(by default it starts the release binary as
`serve --demo --all-namespaces --demo-jobs 40 --demo-pace-ms 50`):

- a foreign Host is refused, loopback names are served;
- 3,000 requests for random namespaces: none answered 200, and the RSS
  growth they cause;
- 300 half-sent requests: how many the server closed within 45 s, and the
  slowest /healthz meanwhile;
- 200 event-stream readers that never read: how many are dropped within
  90 s, and whether a fresh client then gets its snapshot.

Not a test (it takes minutes and reads the machine's clock): a measurement to
report. Traffic goes to 127.0.0.1 only, and every loop is bounded.
  ./scripts/measure-hardening.py [--extra-args "--max-sse-per-client 256"]
"""
import argparse
import http.client
import os
import random
import socket
import string
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def get(port, path, host=None, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Host": host} if host else {}
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def metric(port, name):
    _, body = get(port, "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def closed(sock):
    """True when the server has closed `sock` (EOF or reset)."""
    sock.setblocking(False)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "target/release/dispatch-dash"))
    parser.add_argument("--extra-args", default="")
    args = parser.parse_args()
    port = random.randint(20000, 40000)
    command = [args.binary, "serve", "--demo", "--all-namespaces", "--demo-jobs", "40",
               "--demo-pace-ms", "50", "--listen", f"127.0.0.1:{port}"] + args.extra_args.split()
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if get(port, "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            sys.exit("server not ready in 60 s")
        print(f"server: {' '.join(command[1:])}")

        # 1. Host.
        foreign = get(port, "/api/v1/namespaces", host="evil.example.com")[0]
        loopback = [get(port, "/api/v1/namespaces", host=h)[0]
                    for h in ("localhost:8080", "127.0.0.1", "[::1]:1")]
        print(f"host: evil.example.com -> {foreign}; localhost, 127.0.0.1, [::1] -> {loopback}")

        # 2. Random namespaces.
        before = rss_kb(server.pid)
        answers = {}
        for _ in range(3000):
            ns = "".join(random.choices(string.ascii_lowercase, k=12))
            status = get(port, f"/api/v1/namespaces/{ns}/snapshot")[0]
            answers[status] = answers.get(status, 0) + 1
        after = rss_kb(server.pid)
        print(f"random namespaces: answers {answers}; RSS {before / 1024:.1f} -> "
              f"{after / 1024:.1f} MB ({(after - before) / 1024:+.1f} MB)")

        # 3. Half-sent requests.
        half = []
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            half.append(s)
        start = time.time()
        slowest = 0.0
        done = set()
        while time.time() - start < 45 and len(done) < len(half):
            t = time.time()
            get(port, "/healthz", timeout=5)
            slowest = max(slowest, time.time() - t)
            for i, s in enumerate(half):
                if i not in done and closed(s):
                    done.add(i)
            time.sleep(0.25)
        print(f"half-sent: {len(done)}/300 closed by the server within "
              f"{time.time() - start:.1f} s; slowest /healthz meanwhile {slowest * 1000:.0f} ms")
        for s in half:
            s.close()

        # 4. Stalled event-stream readers.
        stalled, refused = [], 0
        for _ in range(200):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /api/v1/namespaces/team-a/snapshots HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            stalled.append(s)
        time.sleep(1)
        opened = metric(port, "dispatch_dash_sse_clients")
        start = time.time()
        while time.time() - start < 90:
            if metric(port, "dispatch_dash_sse_clients") == 0:
                break
            time.sleep(1)
        left = metric(port, "dispatch_dash_sse_clients")
        print(f"stalled readers: {opened:.0f} streams open 1 s after 200 were started "
              f"(the rest refused at once); {left:.0f} left after {time.time() - start:.1f} s; "
              f"write timeouts {metric(port, 'dispatch_dash_http_write_timeouts_total'):.0f}, "
              f"refused {metric(port, 'dispatch_dash_sse_rejected_total'):.0f}")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/api/v1/namespaces/team-a/snapshots")
        r = c.getresponse()
        first = r.fp.readline() + r.fp.readline()
        print(f"a fresh client: HTTP {r.status}, first lines {first[:60]!r}")
        for s in stalled:
            s.close()
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
