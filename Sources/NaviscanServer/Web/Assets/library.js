// The library page: search and sort the track table, and follow the server's scan live over /ws/push.
"use strict";

const table = document.getElementById("tracks");
const body = table.tBodies[0];
const search = document.getElementById("search");
const shown = document.getElementById("shown");
const rows = Array.from(body.rows);

function filter() {
  const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
  let count = 0;
  for (const row of rows) {
    const text = row.textContent.toLowerCase();
    const match = words.every((w) => text.includes(w));
    row.hidden = !match;
    if (match) count++;
  }
  shown.textContent = words.length ? `${count} of ${rows.length} tracks` : `${rows.length} tracks`;
}

function sortBy(header) {
  const key = header.dataset.key;
  const numeric = header.hasAttribute("data-numeric");
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  for (const th of table.tHead.rows[0].cells) th.removeAttribute("aria-sort");
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const value = (row) => numeric ? parseFloat(row.dataset[key])
    : (row.querySelector(`td[data-key="${key}"]`)?.textContent ?? "").toLowerCase();
  rows.sort((a, b) => {
    const x = value(a), y = value(b);
    const order = numeric ? x - y : x.localeCompare(y);
    return ascending ? order : -order;
  });
  for (const row of rows) body.appendChild(row);
}

for (const th of table.tHead.rows[0].cells) {
  th.tabIndex = 0;
  th.addEventListener("click", () => sortBy(th));
  th.addEventListener("keydown", (e) => { if (e.key === "Enter") sortBy(th); });
}
search.addEventListener("input", filter);
filter();

// Live state: the counts from /health, refreshed on every pushed event and every few seconds.
const stateText = { scanning: "scanning", waiting: "changes seen; a scan starts once they settle", idle: "up to date", off: "not watching" };

async function refresh() {
  try {
    const health = await (await fetch("health")).json();
    document.getElementById("count-profiles").textContent = health.profile_count;
    document.getElementById("count-vis").textContent = health.vis_count;
    document.getElementById("count-failed").textContent = health.failed;
    document.getElementById("count-pending").textContent = health.pending;
    const state = document.getElementById("scan-state");
    state.dataset.state = health.scan_state;
    state.textContent = stateText[health.scan_state] ?? health.scan_state;
    if (health.last_scan) document.getElementById("last-scan").textContent = health.last_scan.replace("T", " ").replace("Z", " UTC");
  } catch (error) {
    document.getElementById("live").textContent = "The server does not answer; is naviscan serve running?";
  }
}

// The push socket under the page's base (a reverse proxy's sub-path included), ws: or wss: as the page.
function pushURL() {
  const url = new URL("ws/push", document.baseURI);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

// The last event number seen: a reconnect asks for what came after it, so nothing is missed.
let lastSeq = null;
const eventWords = {
  track_analyzed: "analysed: ", track_failed: "failed: ", track_removed: "removed: ", track_restored: "back: ",
};

function connect() {
  const url = new URL(pushURL());
  if (lastSeq !== null) url.searchParams.set("after", lastSeq);
  const socket = new WebSocket(url.href);
  const events = document.getElementById("events");
  socket.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (typeof event.seq === "number") lastSeq = event.seq;
    if (event.event === "hello") return;
    if (event.event === "resync") { refresh(); return; }
    const item = document.createElement("li");
    if (event.event === "album_updated") {
      item.append(`album gain updated: ${event.relative_paths.length} track${event.relative_paths.length === 1 ? "" : "s"}`);
    } else {
      const link = document.createElement("a");
      link.href = "track?relative_path=" + encodeURIComponent(event.relative_path);
      link.textContent = event.relative_path;
      item.append(eventWords[event.event] || `${event.event}: `, link);
      if (event.error) item.append(` (${event.error})`);
    }
    events.prepend(item);
    while (events.children.length > 20) events.lastChild.remove();
    refresh();
  };
  socket.onclose = () => setTimeout(connect, 5000);
}

connect();
setInterval(refresh, 5000);
