#!/usr/bin/env python3
"""The abuse run behind docs/hardening.md's figures, against a running `naviscan serve`.

    scripts/tools/server-abuse.py --port 8000 --pid PID --track 'path/of/a/long track.flac'

Each phase prints what it did, the status codes seen, and the server's resident memory (VmRSS) and
peak (VmHWM) from /proc/PID/status. It needs the server's PID, so run it on the server's machine.
"""
import argparse, json, socket, threading, time, urllib.parse

def memory(pid):
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) // 1024
    return f"RSS {fields['VmRSS']} MB, peak {fields['VmHWM']} MB"

def request(port, method, target, body=b"", timeout=60, headers=""):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    head = f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}"
    if body: head += f"Content-Length: {len(body)}\r\n"
    try:
        s.sendall(head.encode() + b"\r\n")
        if body: s.sendall(body)
    except OSError:
        pass   # the server may answer (413) and close before taking the whole body
    total, first = 0, b""
    while True:
        try: chunk = s.recv(1 << 16)
        except OSError: break
        if not chunk: break
        if not first: first = chunk[:64]
        total += len(chunk)
    s.close()
    status = int(first.split(b" ")[1]) if first.startswith(b"HTTP/") else 0
    return status, total

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--track", required=True, help="a library-relative path with frames (a long track)")
    p.add_argument("--idle", type=int, default=1100)
    p.add_argument("--concurrent", type=int, default=32)
    a = p.parse_args()
    port, pid = a.port, a.pid
    frames = "/visualizer/frames?relative_path=" + urllib.parse.quote(a.track)
    print("start:", memory(pid))

    idle = []
    for _ in range(a.idle):
        try: idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        except OSError as e: print("  connect failed:", e); break
    started = time.time()
    status, _ = request(port, "GET", "/health", timeout=30)
    print(f"{len(idle)} idle sockets: /health {status} in {time.time() - started:.2f} s;", memory(pid))
    open_now = 0
    for s in idle:
        s.setblocking(False)
        try: open_now += 1 if s.recv(1) != b"" else 0
        except BlockingIOError: open_now += 1
        except OSError: pass
    print(f"  still open from the server's side: {open_now}")
    for s in idle: s.close()

    trickle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(100)]
    for s in trickle: s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    time.sleep(12)
    closed = 0
    for s in trickle:
        s.setblocking(False)
        try: closed += 1 if s.recv(1 << 16) == b"" else 0
        except BlockingIOError: pass
        except OSError: closed += 1
        s.close()
    print(f"100 slowloris heads after 12 s: {closed} closed by the server;", memory(pid))

    results = []
    def get(binary):
        results.append(request(port, "GET", frames + ("&format=binary" if binary else ""), timeout=600))
    for binary in (False, True):
        results.clear()
        started = time.time()
        threads = [threading.Thread(target=get, args=(binary,)) for _ in range(a.concurrent)]
        for t in threads: t.start()
        for t in threads: t.join()
        sizes = {r[1] for r in results}
        print(f"{a.concurrent} concurrent {'binary' if binary else 'JSON'} frames of {a.track}: statuses {sorted({r[0] for r in results})}, "
              f"{max(sizes) / 1e6:.1f} MB each, {time.time() - started:.1f} s;", memory(pid))

    status, _ = request(port, "POST", "/smart-dj/bulk-profiles", body=b" " * (20 << 20))
    print(f"20 MB POST: {status};", memory(pid))
    paths = json.dumps([f"Somewhere/track {i}.flac" for i in range(9999)] + [a.track]).encode()
    for _ in range(20): request(port, "POST", "/smart-dj/bulk-profiles", body=paths)
    print("20 bulk requests of 10,000 paths:", memory(pid))
    for method, target in (("DELETE", "/health"), ("HEAD", "/health"), ("HEAD", frames)):
        print(f"{method} {target[:40]}: {request(port, method, target)[0]}")
    print("end:", memory(pid))

main()
