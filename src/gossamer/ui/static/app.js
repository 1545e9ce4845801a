// The dashboard: a list of crawls and jobs, and the live page of the one chosen (polled).
import { get, post } from "./api.js";
import { badge, bytes, card, el, fmt, section, table } from "./dom.js";
import { rateChart } from "./chart.js";

const POLL_MS = 1000;
const LIST_MS = 3000;
let current = null; // { kind, id, timer, parts }

function route() {
  const [, kind, id] = (location.hash || "#/").split("/");
  stop();
  if (kind === "crawl" && id) showCrawl(decodeURIComponent(id));
  else if (kind === "job" && id) showJob(decodeURIComponent(id));
  else document.getElementById("main").replaceChildren(
    el("p", { class: "muted", text: "Choose a crawl or a job." }));
  markSelected();
}

function stop() {
  if (current && current.timer) clearTimeout(current.timer);
  current = null;
}

function poll(view, step) {
  const run = async () => {
    if (current !== view) return;
    try {
      await step();
      view.parts.error.hidden = true;
    } catch (err) {
      view.parts.error.hidden = false;
      view.parts.error.textContent = String(err.message || err);
    }
    if (current === view) view.timer = setTimeout(run, POLL_MS);
  };
  run();
}

function stamp() {
  document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

// -- the list ---------------------------------------------------------------------------------

async function refreshList() {
  try {
    const data = await get("/api/overview");
    const crawls = data.crawls.map((c) => el("li", {},
      el("a", { href: `#/crawl/${c.id}`, "data-id": `crawl/${c.id}`, title: c.path },
        el("span", { class: "name", text: c.name }), badge(c.state),
        el("span", { class: "muted small", text: `${fmt(c.pages)} pages` }),
        c.error && el("span", { class: "error small crawl-error", text: c.error }))));
    document.getElementById("crawl-list").replaceChildren(
      ...(crawls.length ? crawls : [el("li", { class: "muted", text: "no crawl found" })]));
    document.getElementById("jobs-title").hidden = !data.redis;
    const jobs = data.jobs.map((j) => el("li", {},
      el("a", { href: `#/job/${encodeURIComponent(j.job)}`, "data-id": `job/${encodeURIComponent(j.job)}` },
        el("span", { class: "name", text: j.job }), badge(j.state),
        el("span", { class: "muted small", text: `${j.workers} workers` }))));
    document.getElementById("job-list").replaceChildren(...jobs);
    const redisError = document.getElementById("redis-error");
    redisError.hidden = !data.redis_error;
    redisError.textContent = data.redis_error || "";
    markSelected();
  } catch (err) {
    document.getElementById("crawl-list").replaceChildren(el("li", { class: "error", text: String(err) }));
  }
  setTimeout(refreshList, LIST_MS);
}

function markSelected() {
  const here = (location.hash || "").replace(/^#\//, "");
  for (const a of document.querySelectorAll("#sidebar a")) {
    a.classList.toggle("selected", a.dataset.id === here);
  }
}

// -- a crawl ----------------------------------------------------------------------------------

function showCrawl(id) {
  const parts = {
    title: el("h2", { text: "crawl" }),
    state: el("span"),
    path: el("p", { class: "muted small" }),
    fileError: el("p", { class: "error", hidden: true }),
    cards: el("div", { class: "cards" }),
    fresh: section("Freshness"),
    chart: el("div", { class: "chart-box" }),
    held: el("div"), statuses: el("div"), errors: el("div"), hosts: el("div"), last: el("div"),
    log: el("div", { class: "log" }),
    level: el("select", { id: "log-level", "aria-label": "log level" },
      ["debug", "info", "warning", "error"].map((l) => el("option", { value: l, text: l }))),
    error: el("p", { class: "error", hidden: true }),
  };
  parts.level.value = "info";
  document.getElementById("main").replaceChildren(
    el("div", { class: "title" }, parts.title, parts.state), parts.path, parts.fileError,
    parts.error, parts.cards, parts.fresh,
    section("Pages/s per minute", parts.chart),
    el("div", { class: "columns" },
      section("Held back by politeness", parts.held),
      section("Top hosts", parts.hosts)),
    el("div", { class: "columns" },
      section("Statuses", parts.statuses),
      section("Errors by reason", parts.errors)),
    section("Last pages", parts.last),
    section("Log", el("label", { class: "small" }, "level ", parts.level), parts.log));
  const view = current = { kind: "crawl", id, timer: null, parts };
  parts.level.addEventListener("change", () => updateLog(id, parts));
  poll(view, async () => {
    const d = await get(`/api/crawls/${id}`);
    renderCrawl(id, d, parts);
    await updateLog(id, parts);
    stamp();
  });
}

function renderCrawl(id, d, parts) {
  const s = d.stats || {};
  parts.title.textContent = d.name;
  parts.state.replaceChildren(badge(d.state));
  parts.path.textContent = d.path;
  parts.fileError.hidden = !d.error;
  parts.fileError.textContent = d.error || "";
  parts.cards.replaceChildren(
    card("pages", fmt(d.pages), "pages"),
    card("pages/s", fmt(s.pages_per_second, 1), "pages_per_second"),
    card("queued", fmt(s.queued), "queued"),
    card("in flight", fmt(s.in_flight), "in_flight"),
    card("ok", fmt(s.ok), "ok"),
    card("errors", fmt(s.errors), "errors"),
    card("retries", fmt(s.retries), "retries"),
    card("robots-blocked", fmt(s.robots_blocked), "robots_blocked"));
  renderFreshness(s, parts.fresh);
  parts.chart.replaceChildren(rateChart(d.rate));
  parts.held.replaceChildren(table(["host", "waiting on", "for", "queued", "in flight"],
    d.held_back.map((h) => [h.host, h.reason, `${fmt(h.wait, h.wait < 1 ? 2 : 1)} s`,
      fmt(h.queued), fmt(h.in_flight)]), "no host is held back"));
  parts.hosts.replaceChildren(table(["host", "pages"], d.top_hosts.map(([h, n]) => [h, fmt(n)])));
  parts.statuses.replaceChildren(table(["status", "pages"],
    Object.entries(d.statuses).map(([k, v]) => [k, fmt(v)])));
  parts.errors.replaceChildren(table(["reason", "pages", "examples"], d.errors.map((e) => [
    e.reason, fmt(e.count),
    el("div", {}, e.examples.map((x) => el("div", {}, recordLink(id, x.id, x.url))))]), "no errors"));
  parts.last.replaceChildren(table(["#", "status", "URL", "title", "size", "ms"],
    d.last_pages.map((p) => [String(p.id), p.status === null ? (p.error || "–") : String(p.status),
      recordLink(id, p.id, p.url), p.title || "", bytes(p.bytes), fmt(p.elapsed_ms)])));
}

// What keeps a crawl fresh (--recrawl, sitemaps and feeds): shown when the crawl has either.
function renderFreshness(s, box) {
  const revisits = s.revisits, sitemaps = s.sitemaps;
  box.hidden = !revisits && !(sitemaps && sitemaps.files_total);
  if (box.hidden) return;
  const cards = [];
  if (revisits) {
    const results = revisits.results || {};
    for (const name of ["changed", "unchanged", "not-modified", "gone"]) {
      cards.push(card(`revisits ${name}`, fmt(results[name] || 0), `revisits-${name}`));
    }
    cards.push(card("due backlog", fmt(revisits.backlog), "revisits-backlog"));
    cards.push(card("saved by 304s", bytes(revisits.bytes_saved), "revisits-bytes-saved"));
  }
  if (sitemaps) {
    cards.push(card("sitemap/feed files", fmt(sitemaps.files_total), "sitemap-files"));
    cards.push(card("sitemap/feed URLs found", fmt(sitemaps.entries_total), "sitemap-urls"));
    cards.push(card("of them new", fmt(sitemaps.admitted_total), "sitemap-new"));
  }
  box.replaceChildren(box.firstChild, el("div", { class: "cards" }, cards));
}

function recordLink(id, page, url) {
  return el("a", { href: "#", class: "record-link", "data-page": page, onclick: (event) => {
    event.preventDefault();
    openRecord(id, page);
  } }, url);
}

async function openRecord(id, page) {
  const record = await get(`/api/crawls/${id}/pages/${page}`);
  document.getElementById("record-title").textContent = record.url;
  document.getElementById("record-body").textContent = JSON.stringify(record, null, 2);
  const dialog = document.getElementById("record");
  if (!dialog.open) dialog.showModal();
}

async function updateLog(id, parts) {
  const d = await get(`/api/crawls/${id}/log?level=${encodeURIComponent(parts.level.value)}`);
  const lines = d.lines.slice(-200).reverse();
  parts.log.replaceChildren(...(lines.length ? lines.map((l) => el("div", { class: `line level-${l.level}` },
    el("span", { class: "time", text: l.time.replace("T", " ").slice(0, 19) }),
    el("span", { class: "lvl", text: l.level }),
    el("span", { class: "msg", text: l.message }))) : [el("p", { class: "muted", text: "no lines" })]));
}

// -- a cluster job ----------------------------------------------------------------------------

function showJob(job) {
  const parts = {
    title: el("h2", { text: job }),
    state: el("span"),
    controls: el("div", { class: "controls" }),
    cards: el("div", { class: "cards" }),
    chart: el("div", { class: "chart-box" }),
    workers: el("div"), model: el("div"),
    error: el("p", { class: "error", hidden: true }),
    confirming: false,
  };
  const act = async (state) => {
    await post(`/api/jobs/${encodeURIComponent(job)}/state`, { state });
    parts.confirming = false;
  };
  const pause = el("button", { id: "pause", type: "button", text: "Pause", onclick: () => act("paused") });
  const resume = el("button", { id: "resume", type: "button", text: "Resume", onclick: () => act("running") });
  const stopButton = el("button", { id: "stop", type: "button", class: "danger", text: "Stop",
    onclick: () => {
      if (!parts.confirming) { parts.confirming = true; stopButton.textContent = "Confirm stop"; return; }
      act("stopped");
    } });
  parts.buttons = { pause, resume, stop: stopButton };
  parts.controls.append(pause, resume, stopButton);
  document.getElementById("main").replaceChildren(
    el("div", { class: "title" }, parts.title, parts.state), parts.controls, parts.error, parts.cards,
    section("Pages/s per minute (all workers)", parts.chart),
    section("Workers", parts.workers),
    section("Allocation", parts.model));
  const view = current = { kind: "job", id: job, timer: null, parts };
  poll(view, async () => {
    renderJob(await get(`/api/jobs/${encodeURIComponent(job)}`), parts);
    stamp();
  });
}

function renderJob(d, parts) {
  const t = d.totals;
  const state = d.done ? "finished" : d.state;
  parts.state.replaceChildren(badge(state));
  parts.buttons.pause.disabled = d.state !== "running" || d.done;
  parts.buttons.resume.disabled = d.state === "running" || d.done;
  parts.buttons.stop.disabled = d.state === "stopped" || d.done;
  if (!parts.confirming) parts.buttons.stop.textContent = "Stop";
  const live = d.workers.reduce((a, w) => ({
    queue: a.queue + (w.live.queue_depth || 0), errors: a.errors + (w.live.errors || 0),
    bandwidth: a.bandwidth + (w.live.bandwidth_bps || 0), pages: a.pages + (w.pages || 0),
  }), { queue: 0, errors: 0, bandwidth: 0, pages: 0 });
  parts.cards.replaceChildren(
    card("finished", fmt(t.finished), "finished"),
    card("pages/s", fmt(d.pages_per_second, 1), "pages_per_second"),
    card("queued", fmt(t.queued), "queued"),
    card("claimed by workers", fmt(t.claimed), "claimed"),
    card("seen", fmt(t.seen), "seen"),
    card("workers", fmt(d.workers.length), "workers"),
    card("errors", fmt(live.errors), "errors"),
    card("bandwidth", `${bytes(live.bandwidth)}/s`, "bandwidth"));
  parts.chart.replaceChildren(rateChart(d.rate));
  const rows = d.workers.map((w) => [
    w.name, fmt(w.partitions), fmt(w.pages), fmt(w.pages_per_second, 1),
    fmt(w.live.queue_depth), fmt(w.live.mean_latency, 3), fmt(w.capability.cores),
    w.capability.freq_mhz ? `${fmt(w.capability.freq_mhz)} MHz` : "–",
    w.capability.memory_mb ? `${fmt(w.capability.memory_mb)} MB` : "–",
    `${bytes(w.capability.bandwidth_bps)}/s`, w.capability.disk_mb_s ? `${fmt(w.capability.disk_mb_s, 1)} MB/s` : "–",
    d.leader === w.name ? "leader" : "",
  ]);
  if (rows.length) rows.push(["total", fmt(d.workers.reduce((a, w) => a + w.partitions, 0)),
    fmt(live.pages), fmt(d.pages_per_second, 1), fmt(live.queue), "", "", "", "", "", "", ""]);
  const tableNode = table(["worker", "partitions", "pages", "pages/s", "queue", "latency s", "cores",
    "CPU", "memory", "bandwidth", "disk", ""], rows, "no live worker");
  tableNode.id = "workers";
  parts.workers.replaceChildren(tableNode);
  const model = d.runtime_model;
  parts.model.replaceChildren(
    el("p", {}, `allocator ${d.allocator || "–"}, assignment v${d.assignment_version}, leader ${d.leader || "–"}`),
    model ? el("p", { class: "muted", text: model.summary }) : el("p", { class: "muted", text: "no runtime model report yet" }));
}

document.getElementById("record-close").addEventListener("click", () =>
  document.getElementById("record").close());
document.getElementById("logout").addEventListener("click", async () => {
  stop();
  await post("/api/logout", {});
  location.replace("/"); // now 401: the session is over, the token URL starts another
});
window.addEventListener("hashchange", route);
refreshList();
route();
