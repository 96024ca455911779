#!/usr/bin/env python3
"""The web page in a real browser: Debian's chromium, headless, driven over the DevTools protocol
(a WebSocket client in the standard library only) against a live `naviscan serve` on loopback.

    scripts/ci/browser-test.py NAVISCAN [--screenshots DIR]

Scans a copy of the demo library (Fixtures/demo), serves it, and asserts (then again off loopback,
with a token, under --base-path /naviscan):
  - / lists every demo track in its table;
  - /track draws a non-empty visualizer canvas for the time the <audio> element is at;
  - the <audio> element loads the track through /stream with a Range request (206 in the server log);
  - the waveform canvas is drawn across the track (bars at mid-height, from /waveform).
Exit status 0 when every check passed, 1 otherwise.
"""
import base64, json, os, re, shutil, socket, struct, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "Fixtures", "demo")


class DevTools:
    """One DevTools page session over a WebSocket (RFC 6455, client side, text frames)."""

    def __init__(self, url):
        host, port, path = re.match(r"ws://([^:/]+):(\d+)(/.*)", url).groups()
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(f"DevTools refused the WebSocket: {head!r}")
        self.next_id = 0

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            data += chunk
        return data

    def _send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                  bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _receive(self):
        message = b""
        while True:
            first, second = self._read(2)
            n = second & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if first & 0x0F == 0x9:  # ping: ignored (DevTools does not send them)
                continue
            message += payload
            if first & 0x80:
                return json.loads(message)

    def call(self, method, **params):
        self.next_id += 1
        self._send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            answer = self._receive()
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                if self.evaluate(expression):
                    return True
            except RuntimeError as error:
                # Asked while the page navigates (a click that loads another page): ask again on the new one.
                if "navigated or closed" not in str(error) and "Cannot find context" not in str(error):
                    raise
            time.sleep(0.1)
        return False

    def open(self, url):
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete' && location.href === " + json.dumps(url))

    def screenshot(self, path, width, height):
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))


# Pixels a canvas has drawn (alpha > 0): its background is the page's, so an untouched canvas has none.
DRAWN = """(id => { const c = document.getElementById(id); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; })(%s)"""


def listening_port(log_path, host):
    """The port `naviscan serve --port 0` printed it listens on (10 s at most)."""
    for _ in range(200):
        match = re.search(r"listening on http://" + re.escape(host) + r":(\d+)", open(log_path).read())
        if match:
            return int(match.group(1))
        time.sleep(0.05)
    raise RuntimeError(f"naviscan serve on {host} did not start: " + open(log_path).read())


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    naviscan = os.path.abspath(sys.argv[1])
    shots = os.path.abspath(sys.argv[sys.argv.index("--screenshots") + 1]) if "--screenshots" in sys.argv else None
    browser = shutil.which("chromium") or sys.exit("chromium is not installed: run `make browser-deps` (Debian's chromium)")
    scratch = tempfile.mkdtemp(prefix="naviscan-browser-")
    library, out = os.path.join(scratch, "Music"), os.path.join(scratch, "out")
    shutil.copytree(DEMO, library)
    subprocess.run([naviscan, "scan", library, "--out", out, "--quiet"], check=True)
    tracks = sorted(os.listdir(library))
    log_path = os.path.join(scratch, "serve.log")
    server = subprocess.Popen([naviscan, "serve", "--library", library, "--out", out, "--port", "0"],
                              stderr=open(log_path, "w"), stdout=subprocess.DEVNULL)
    chrome = None
    failures = []

    def check(ok, what):
        print(("ok      " if ok else "FAILED  ") + what)
        if not ok:
            failures.append(what)

    try:
        port = listening_port(log_path, "127.0.0.1")
        base = f"http://127.0.0.1:{port}"
        profile_dir = os.path.join(scratch, "chromium")
        chrome = subprocess.Popen([browser, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile_dir}",
                                   "--no-sandbox", "--no-first-run", "--disable-gpu", "--mute-audio",
                                   "--autoplay-policy=no-user-gesture-required", "about:blank"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(profile_dir, "DevToolsActivePort")
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.1)
        devtools_port = int(open(port_file).read().split()[0])
        request = urllib.request.Request(f"http://127.0.0.1:{devtools_port}/json/new?about:blank", method="PUT")
        target = json.load(urllib.request.urlopen(request, timeout=30))
        page = DevTools(target["webSocketDebuggerUrl"])
        page.call("Page.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=1200, height=900, deviceScaleFactor=1, mobile=False)

        # The server's first background scan finds the library up to date; wait for it to settle.
        for _ in range(300):
            if json.load(urllib.request.urlopen(base + "/health", timeout=10)).get("scan_state") == "idle":
                break
            time.sleep(0.1)
        page.open(base + "/")
        listed = page.evaluate("Array.from(document.querySelectorAll('#tracks tbody tr')).map(r => r.dataset.path)")
        check(sorted(listed or []) == tracks, f"the library table lists the demo library ({listed} == {tracks})")
        page.evaluate("document.getElementById('search').value = 'groove'; document.getElementById('search').dispatchEvent(new Event('input'))")
        visible = page.evaluate("Array.from(document.querySelectorAll('#tracks tbody tr')).filter(r => !r.hidden).map(r => r.dataset.path)")
        check(visible == ["groove_120bpm.mp3"], f"searching 'groove' leaves one row ({visible})")
        page.evaluate("document.getElementById('search').value = ''; document.getElementById('search').dispatchEvent(new Event('input'))")
        if shots:
            page.screenshot(os.path.join(shots, "library.png"), 1200, 700)

        track = "groove_120bpm.mp3"
        page.open(base + "/track?relative_path=" + track)
        check(page.wait_for("document.body.dataset.loaded === 'yes'"), "the track page loaded its profile, frames and waveform answers")
        # Seek to a loud part and play (muted): the visualizer follows currentTime.
        page.evaluate("(async () => { const a = document.getElementById('audio'); a.currentTime = 4; try { await a.play(); } catch (e) {} })()")
        loaded = page.wait_for("document.getElementById('audio').readyState >= 2 && !document.getElementById('audio').error")
        check(loaded, "the <audio> element loaded the track (readyState >= HAVE_CURRENT_DATA, no error)")
        page.wait_for("document.getElementById('audio').currentTime > 4.2", seconds=5)
        time.sleep(0.5)
        drawn = page.evaluate(DRAWN % json.dumps("visualizer"))
        check(drawn > 1000, f"the visualizer canvas is drawn ({drawn} pixels)")
        log = open(log_path).read()
        ranged = re.findall(r'GET /stream "groove_120bpm\.mp3" \(bytes=[^)]*\) 206', log)
        check(bool(ranged), f"the audio came through /stream with a Range request answered 206 ({len(ranged)} requests)")

        drawn = page.evaluate(DRAWN % json.dumps("waveform"))
        wave_bars = page.evaluate("""(() => { const c = document.getElementById('waveform');
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
          for (let x = 0; x < c.width; x += 4) { const i = ((c.height >> 1) * c.width + x) * 4; if (d[i + 3] === 255) n++; } return n; })()""")
        check(wave_bars > 20, f"the waveform canvas is drawn across the track ({wave_bars} columns at mid-height, {drawn} pixels)")
        # Beat and bar ticks: the grid /smart-dj/beats lists, drawn at the canvas's top edge.
        grid = json.loads(urllib.request.urlopen(base + "/smart-dj/beats?relative_path=" + track, timeout=10).read())
        counts = page.evaluate("[Number(document.getElementById('waveform').dataset.beats), Number(document.getElementById('waveform').dataset.bars)]")
        check(counts == [len(grid["beats"]), len(grid["downbeats"])] and len(grid["beats"]) > 10,
              f"the page reads the beat grid /smart-dj/beats lists ({counts} beats and bars; served {len(grid['beats'])} and {len(grid['downbeats'])})")
        ticked = page.evaluate("""((times, total) => { const c = document.getElementById('waveform');
          const d = c.getContext('2d').getImageData(0, 0, c.width, 3).data;
          return times.filter(t => { const x = Math.round(t / total * c.width); return x < c.width && d[(c.width + x) * 4 + 3] === 255; }).length; })(%s, %s)"""
          % (json.dumps(grid["beats"]), json.dumps(page.evaluate("duration()"))))
        check(ticked is not None and ticked >= 0.9 * len(grid["beats"]), f"a tick is drawn at the top edge for each beat ({ticked} of {len(grid['beats'])})")

        # More like this: the two other demo tracks, each with a play button that plays it here.
        listed_similar = page.wait_for("document.querySelectorAll('#similar li').length === 2")
        similar_text = page.evaluate("document.getElementById('similar').innerText")
        check(listed_similar, f"'More like this' lists the other two tracks ({similar_text!r})")
        others = page.evaluate("Array.from(document.querySelectorAll('#similar li a')).map(a => new URL(a.href).searchParams.get('relative_path'))")
        check(sorted(others or []) == sorted(t for t in tracks if t != track), f"'More like this' names the other tracks ({others})")
        # Its play button opens that track's page and plays it there: title, profile, waveform and
        # visualizer follow the audio, not the track the list was made for.
        played = page.evaluate("new URL(document.querySelector('#similar li a').href).searchParams.get('relative_path')")
        page.evaluate("document.querySelector('#similar button.play').click()")
        followed = page.wait_for("new URLSearchParams(location.search).get('relative_path') === %s && document.body && document.body.dataset.loaded === 'yes'"
                                 % json.dumps(played))
        check(followed, f"a play button in 'More like this' opens {played}'s page ({page.evaluate('location.href')})")
        heading = page.evaluate("document.title")
        check(played is not None and played in (heading or ""), f"the page's title names the track that plays ({heading!r})")
        switched = page.wait_for("decodeURIComponent(document.getElementById('audio').src).includes(%s) && document.getElementById('audio').readyState >= 2 && !document.getElementById('audio').paused"
                                 % json.dumps("relative_path=" + (played or "?")))
        check(switched, "and plays that track through /stream")
        if shots:
            page.screenshot(os.path.join(shots, "track.png"), 1200, 900)

        # The same pages as a LAN user behind a reverse proxy's sub-path sees them: off loopback (so a
        # token), under --base-path /naviscan. The token is given once in the address; every later
        # request (links, scripts, fetches, the audio, the push socket) must work from the cookie and
        # the page's <base>.
        server.terminate()
        server.wait(10)
        open(log_path, "w").close()
        server = subprocess.Popen([naviscan, "serve", "--library", library, "--out", out, "--port", "0", "--host", "0.0.0.0",
                                   "--base-path", "/naviscan"], stderr=open(log_path, "w"), stdout=subprocess.DEVNULL)
        port = listening_port(log_path, "0.0.0.0")
        token = open(os.path.join(out, "token")).read().strip()
        base = f"http://127.0.0.1:{port}/naviscan"
        page.open(base + "/track?relative_path=" + track)
        refused = page.evaluate("document.body.innerText")
        check("access token" in (refused or ""), "without the token the page says it needs one")
        page.open(base + "/?token=" + token)
        check(page.evaluate("location.href") == base + "/", f"?token= redirects to the page without it ({page.evaluate('location.href')})")
        listed = page.evaluate("Array.from(document.querySelectorAll('#tracks tbody tr')).map(r => r.dataset.path)")
        check(sorted(listed or []) == tracks, "under /naviscan with the cookie, the library table lists the demo library")
        link = page.evaluate("document.querySelector('#tracks tbody a').href")
        check((link or "").startswith(base + "/track?"), f"the table's links resolve under /naviscan ({link})")
        page.open(link)
        check(page.wait_for("document.body && document.body.dataset.loaded === 'yes'"), "the track page under /naviscan loads its answers")
        page.evaluate("(async () => { const a = document.getElementById('audio'); try { await a.play(); } catch (e) {} })()")
        check(page.wait_for("document.getElementById('audio').readyState >= 2 && !document.getElementById('audio').error"),
              "the <audio> element loads through /naviscan/stream with the cookie")
        statuses = page.evaluate("performance.getEntriesByType('resource').map(e => [e.name, e.responseStatus])")
        bad = [entry for entry in (statuses or []) if not entry[0].startswith(base + "/") or entry[1] not in (200, 206)]
        check(bool(statuses) and not bad, f"every resource the page loaded is under {base}/ and answered 200 or 206 ({bad or len(statuses)})")
        log = open(log_path).read()
        check(log.count(token) == 1 and not any(token in line for line in log.splitlines() if " GET " in line),
              f"the token is in the server's output once, where it was made, never in a request line ({log.count(token)} times)")
        socket_ok = False
        page.open(base + "/")
        for _ in range(50):
            if re.search(r"GET /ws/push 101|GET /ws/push 200", open(log_path).read()):
                socket_ok = True
                break
            time.sleep(0.1)
        check(socket_ok, "the library page opened the push socket under /naviscan/ws/push")
    finally:
        for process in (chrome, server):
            if process:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print(f"{len(failures)} browser check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("every browser check passed")


if __name__ == "__main__":
    main()
