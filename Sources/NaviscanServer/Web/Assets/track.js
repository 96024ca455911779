// The track page: a waveform seek bar (from /waveform, with the profile's silence edges, crossfade
// ramps, audible end, and beat and bar ticks from its beat grid marked) and a visualizer drawn from the track's frame file, frame =
// currentTime × fps, in sync with the <audio> element.
"use strict";

const main = document.getElementById("track");
const path = main.dataset.path;
const query = "relative_path=" + encodeURIComponent(path);
const audio = document.getElementById("audio");
const waveCanvas = document.getElementById("waveform");
const visCanvas = document.getElementById("visualizer");
let profile = null, waveform = null, frames = null;
let ticks = { beats: [], bars: [] };
let seekTime = 0;  // without <audio> (--no-stream), the seek bar sets the time

function note(id, text) {
  const element = document.getElementById(id);
  element.textContent = text;
  element.hidden = false;
}

function currentTime() { return audio ? audio.currentTime : seekTime; }
function duration() { return profile?.duration || frames?.duration || waveform?.duration || audio?.duration || 0; }

// --- the frame file (docs/vis-format.md) ---

function half(bits) {
  const sign = bits & 0x8000 ? -1 : 1, exponent = (bits >> 10) & 0x1f, fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

function parseFrames(buffer) {
  const view = new DataView(buffer);
  const magic = String.fromCharCode(...new Uint8Array(buffer, 0, 7));
  if (buffer.byteLength < 128 || magic !== "NVISFRM") throw new Error("not a naviscan frame file");
  const version = view.getUint16(8, true);
  if (version !== 1) throw new Error(`frame file version ${version} is newer than this page`);
  const headerSize = view.getUint16(10, true), encoding = view.getUint8(12), bands = view.getUint16(14, true);
  const fps = view.getFloat32(16, true), count = Number(view.getBigUint64(24, true));
  const stride = view.getUint32(76, true);
  const size = [4, 2, 1][encoding];
  if (!size || stride !== bands * size) throw new Error("unknown frame encoding");
  const read = [(o) => view.getFloat32(o, true), (o) => half(view.getUint16(o, true)), (o) => view.getUint8(o) / 255][encoding];
  return {
    fps, count, bands, duration: view.getFloat64(32, true),
    value(frame, band) { return read(headerSize + frame * stride + band * size); },
  };
}

// --- drawing ---

const css = getComputedStyle(document.documentElement);
const color = (name, fallback) => css.getPropertyValue(name).trim() || fallback;

function drawVisualizer() {
  const g = visCanvas.getContext("2d");
  g.clearRect(0, 0, visCanvas.width, visCanvas.height);
  if (!frames || frames.count === 0) return;
  const frame = Math.min(frames.count - 1, Math.max(0, Math.round(currentTime() * frames.fps)));
  const width = visCanvas.width / frames.bands, height = visCanvas.height;
  g.fillStyle = color("--accent", "#4fc3f7");
  for (let band = 0; band < frames.bands; band++) {
    const value = Math.min(1, Math.max(0, frames.value(frame, band)));
    g.fillRect(band * width + 1, height * (1 - value), width - 2, height * value);
  }
}

/// A MixRamp "dB seconds;dB seconds;…" string (or an array of {db, seconds}) as its time span.
function rampSpan(ramp) {
  if (!ramp) return null;
  // MixRamp: "dB seconds;dB seconds;..."
  const points = ramp.split(";").map((p) => p.trim().split(/\s+/).map(Number))
    .filter((p) => p.length === 2 && p.every(Number.isFinite)).map((p) => p[1]);
  return points.length ? Math.max(...points) : null;
}

/// The beat grid (docs/profile-format.md, "Beat grid") written out: beat k of a segment is at
/// start + k × interval; bar lines are every meter-th beat from first_downbeat.
function gridTimes(grid) {
  const beats = [];
  for (const segment of grid?.segments ?? []) {
    for (let k = 0; k < segment.count; k++) beats.push(segment.start + k * segment.interval);
  }
  const bars = grid?.meter ? beats.filter((_, i) => i >= grid.first_downbeat && (i - grid.first_downbeat) % grid.meter === 0) : [];
  return { beats, bars };
}

function drawTicks(g, x, h) {
  // Beats as short ticks at the top and bottom edges, bar lines as longer ones; beats closer than
  // 3 pixels (a long track on a narrow screen) are left out, and bars too when they are that close.
  const spaced = (times) => times.length < 2 || x(times[1]) - x(times[0]) >= 3;
  const draw = (times, length, style) => {
    g.fillStyle = style;
    for (const t of times) { const px = Math.round(x(t)); g.fillRect(px, 0, 1, length); g.fillRect(px, h - length, 1, length); }
  };
  if (spaced(ticks.beats)) draw(ticks.beats, 6, color("--beat", "#b0bec5"));
  if (spaced(ticks.bars)) draw(ticks.bars, 14, color("--bar", "#ffffff"));
}

function drawWaveform() {
  const g = waveCanvas.getContext("2d");
  const w = waveCanvas.width, h = waveCanvas.height, total = duration();
  g.clearRect(0, 0, w, h);
  if (!total) return;
  const x = (t) => (t / total) * w;
  if (waveform) {
    const bins = waveform.peak.length, step = w / bins;
    for (let i = 0; i < bins; i++) {
      const played = (i + 0.5) * step <= x(currentTime());
      const peak = waveform.peak[i] * h, rms = (waveform.rms?.[i] ?? 0) * h;
      g.fillStyle = played ? color("--accent-dim", "#2b6f8f") : color("--wave", "#55606e");
      g.fillRect(i * step, (h - peak) / 2, Math.max(1, step - 0.5), peak);
      g.fillStyle = played ? color("--accent", "#4fc3f7") : color("--wave-rms", "#8a96a6");
      g.fillRect(i * step, (h - rms) / 2, Math.max(1, step - 0.5), rms);
    }
  }
  if (profile) {
    // Crossfade ramps: the span the start and end envelopes cover.
    const start = rampSpan(profile.start_ramp), end = rampSpan(profile.end_ramp);
    g.fillStyle = color("--ramp", "rgba(255, 193, 7, 0.18)");
    if (start) g.fillRect(0, 0, x(start), h);
    if (end) g.fillRect(x(total - end), 0, x(end), h);
    const line = (t, style) => { if (t == null || !Number.isFinite(t)) return; g.fillStyle = style; g.fillRect(Math.round(x(t)) - 1, 0, 2, h); };
    line(profile.silence_end, color("--silence", "#e57373"));
    line(profile.silence_start, color("--silence", "#e57373"));
    line(profile.audible_end, color("--audible", "#81c784"));
    drawTicks(g, x, h);
  }
  g.fillStyle = color("--text", "#e8eaed");
  g.fillRect(Math.round(x(currentTime())), 0, 1, h);
}

function frame() {
  drawVisualizer();
  drawWaveform();
  requestAnimationFrame(frame);
}

waveCanvas.addEventListener("click", (event) => {
  const rect = waveCanvas.getBoundingClientRect();
  const t = ((event.clientX - rect.left) / rect.width) * duration();
  if (audio) audio.currentTime = t; else seekTime = t;
});

// --- loading ---

async function load() {
  const bins = Math.min(4096, Math.max(8, Math.round(waveCanvas.clientWidth || 600)));
  const [profileAnswer, waveAnswer, framesAnswer] = await Promise.all([
    fetch("smart-dj/profile?" + query), fetch(`waveform?${query}&bins=${bins}`),
    fetch("visualizer/frames?format=binary&" + query),
  ]);
  if (profileAnswer.ok) {
    profile = await profileAnswer.json();
    ticks = gridTimes(profile.beat_grid);
    waveCanvas.dataset.beats = ticks.beats.length;
    waveCanvas.dataset.bars = ticks.bars.length;
  }
  if (waveAnswer.ok) {
    waveform = await waveAnswer.json();
    if (!Array.isArray(waveform.peak)) { waveform = null; note("waveform-note", "The waveform answer has no peaks."); }
  } else {
    note("waveform-note", waveAnswer.status === 404
      ? "No waveform for this track on this server (it needs a naviscan with waveforms, and a scan that wrote them)."
      : `The waveform could not be loaded (HTTP ${waveAnswer.status}).`);
  }
  if (framesAnswer.ok) {
    try { frames = parseFrames(await framesAnswer.arrayBuffer()); } catch (error) { note("visualizer-note", error.message); }
  } else {
    note("visualizer-note", `No visualizer frames for this track (HTTP ${framesAnswer.status}).`);
  }
  document.body.dataset.loaded = "yes";
}

load().finally(() => {
  requestAnimationFrame(frame);
  // Opened from a ▶ in "More like this": play at once (the click was the user's gesture).
  if (audio && new URLSearchParams(location.search).get("play") === "1") audio.play().catch(() => {});
});

// --- more like this (/similar): each with a play button that opens that track's page and plays it,
// so the title, profile, waveform and visualizer are always the playing track's ---

async function loadSimilar() {
  const list = document.getElementById("similar");
  try {
    const response = await fetch("similar?count=10&" + query);
    const body = await response.json();
    if (!response.ok) { note("similar-note", body.error || "no similar tracks"); return; }
    if (body.sonicMatch.length === 0) { note("similar-note", "No other track with sound features in this library yet."); return; }
    for (const match of body.sonicMatch) {
      const item = document.createElement("li");
      const entry = match.entry;
      if (audio && main.dataset.stream === "on") {
        const play = document.createElement("button");
        play.type = "button";
        play.className = "play";
        play.textContent = "▶";
        play.title = "play " + entry.path;
        play.addEventListener("click", () => {
          location.href = "track?relative_path=" + encodeURIComponent(entry.path) + "&play=1";
        });
        item.append(play, " ");
      }
      const link = document.createElement("a");
      link.href = "track?relative_path=" + encodeURIComponent(entry.path);
      link.textContent = [entry.artist, entry.title].filter(Boolean).join(" – ") || entry.path;
      item.append(link, ` ${Math.round(match.similarity * 100)} %`);
      if (match.duplicate) item.append(" (same recording)");
      list.append(item);
    }
  } catch (error) {
    note("similar-note", "Similar tracks could not be loaded.");
  }
}

loadSimilar();
