// The rule editor: a sample page shown sanitised in a frame that runs no script; this page
// reads the clicks (an overlay over the frame) and marks elements in the frame's document.
import { get, post } from "/static/api.js";
import { el } from "/static/dom.js";
import { fieldBlock, linkBlock } from "/editor/static/form.js";
import { renderPreview } from "/editor/static/preview.js";
import { generalise, select } from "/editor/static/selector.js";

const $ = (id) => document.getElementById(id);
const MARKS = ["data-g-match", "data-g-pos", "data-g-neg", "data-g-record", "data-g-hover"];
const FRAME_STYLE = `
[data-g-record] { outline: 2px dashed #2f6fde !important; outline-offset: 2px; }
[data-g-match] { outline: 2px solid #e0a800 !important; background: rgba(245,179,1,.18) !important; }
[data-g-pos] { outline: 2px solid #1e8e3e !important; background: rgba(30,142,62,.22) !important; }
[data-g-neg] { outline: 2px solid #c0392b !important; background: rgba(192,57,43,.2) !important; text-decoration: line-through; }
[data-g-hover] { box-shadow: 0 0 0 2px #1d2330 !important; }
img { min-width: 24px; min-height: 24px; background: #e5e7eb; }`; // not loaded: still clickable

const state = {
  info: { processors: [], arguments: {} },
  samples: [], // {id, url}
  current: null, // the id shown
  doc: null, // the frame's document
  rule: newRule(),
  target: null, // {kind: "record"} | {kind: "field", index} | {kind: "link", index}
  opened: null, // the name of the rule opened from a document
};

function newRule() {
  return { record: { css: "", pos: [], neg: [] }, fields: [], links: [] };
}

function newPick(extra = {}) {
  return { css: "", pos: [], neg: [], ...extra };
}

function status(text) {
  $("status").textContent = text;
}

// ---------------------------------------------------------------- samples and the frame
async function fetchSample(event) {
  event.preventDefault();
  $("fetch-error").hidden = true;
  status("fetching…");
  try {
    const found = await post("/editor/api/fetch", { url: $("sample-url").value });
    if (!state.samples.some((s) => s.id === found.id)) state.samples.push({ id: found.id, url: found.url });
    if (!$("rule-url").value) $("rule-url").value = found.pattern;
    showSample(found.id);
    status(`fetched ${found.url}`);
  } catch (error) {
    $("fetch-error").textContent = reason(error);
    $("fetch-error").hidden = false;
    status("");
  }
}

function reason(error) {
  const text = String(error.message || error);
  const json = text.indexOf("{");
  if (json >= 0) {
    try {
      const body = JSON.parse(text.slice(json));
      return body.error || (body.problems || []).join("\n") || text;
    } catch { /* not JSON */ }
  }
  return text;
}

function renderSamples() {
  $("samples").replaceChildren(...state.samples.flatMap((s) => [el("button", {
    type: "button", class: s.id === state.current ? "current" : "", text: s.url, title: s.url,
    onclick: () => showSample(s.id),
  }), el("button", { type: "button", class: "small", text: "×", title: "drop this sample",
    onclick: () => dropSample(s.id) })]));
}

function dropSample(id) {
  state.samples = state.samples.filter((s) => s.id !== id);
  if (state.current === id) showSample(state.samples[0]?.id ?? null);
  else renderSamples();
}

function showSample(id) {
  state.current = id;
  state.doc = null;
  forgetElements();
  renderSamples();
  $("overlay").hidden = true;
  $("page-frame").src = id ? `/editor/frame/${id}` : "about:blank";
}

function forgetElements() {
  // Clicked elements belong to one page: their selectors stay, the elements go.
  for (const pick of allPicks()) { pick.pos = []; pick.neg = []; }
}

function allPicks() {
  return [state.rule.record, ...state.rule.fields, ...state.rule.links];
}

function frameLoaded() {
  const frame = $("page-frame");
  const doc = frame.contentDocument;
  if (!doc || !state.current || !frame.src.includes(state.current)) return;
  state.doc = doc;
  const style = doc.createElement("style");
  style.textContent = FRAME_STYLE;
  (doc.head || doc.documentElement).append(style);
  sizeFrame();
  $("overlay").hidden = false;
  highlight();
  document.body.dataset.ready = state.current; // tests wait for it
}

function sizeFrame() {
  const frame = $("page-frame");
  const box = $("frame-box");
  const root = state.doc.documentElement;
  frame.style.height = "10px";
  const height = Math.max(box.clientHeight, root.scrollHeight, state.doc.body?.scrollHeight || 0);
  const width = Math.max(box.clientWidth, root.scrollWidth);
  frame.style.height = `${height}px`;
  frame.style.width = `${width}px`;
  const overlay = $("overlay");
  overlay.style.height = `${height}px`;
  overlay.style.width = `${width}px`;
}

function pointed(event) {
  if (!state.doc) return null;
  const rect = $("page-frame").getBoundingClientRect();
  const found = state.doc.elementFromPoint(event.clientX - rect.left, event.clientY - rect.top);
  if (!found || found === state.doc.documentElement || found === state.doc.body) return null;
  return found;
}

let hovered = null;
function hover(event) {
  const found = pointed(event);
  if (found === hovered) return;
  hovered?.removeAttribute("data-g-hover");
  hovered = found;
  hovered?.setAttribute("data-g-hover", "");
}

// ---------------------------------------------------------------- picking
function targetPick() {
  const t = state.target;
  if (!t) return null;
  if (t.kind === "record") return state.rule.record;
  return t.kind === "field" ? state.rule.fields[t.index] : state.rule.links[t.index];
}

function scopesFor(target) {
  if (!state.doc || target?.kind !== "field" || !state.rule.record.css) return null;
  return select(state.doc, state.rule.record.css);
}

function clickPage(event) {
  event.preventDefault();
  const pick = targetPick();
  const found = pointed(event);
  if (!pick || !found) {
    status(pick ? "" : "choose what to pick first: a field's Pick button, the record or a link rule");
    return;
  }
  const scopes = scopesFor(state.target);
  if (scopes && !scopes.some((s) => s.contains(found))) {
    status("a field of a record is picked inside a record container (outlined in blue)");
    return;
  }
  // A click inside an example, a rejected or a highlighted element is a click on it.
  const within = (set) => {
    for (let node = found; node && node !== state.doc.body; node = node.parentElement) {
      if (set.includes(node)) return node;
    }
    return null;
  };
  const positive = within(pick.pos);
  const negative = within(pick.neg);
  const matched = within(pick.css ? select(state.doc, pick.css, scopes) : []);
  if (positive) pick.pos = pick.pos.filter((e) => e !== positive);
  else if (negative) pick.neg = pick.neg.filter((e) => e !== negative);
  else if (matched) pick.neg.push(matched);
  else pick.pos.push(found);
  refine(pick, scopes);
}

function refine(pick, scopes) {
  if (pick.pos.length) pick.css = generalise(state.doc, pick.pos, pick.neg, scopes);
  if (state.target.kind === "field" && pick.pos.length) pick.attrs = attributesOf(pick.pos[0]);
  render();
}

// The last example's parent instead of it: a container is most easily picked this way.
function pickParent() {
  const pick = targetPick();
  const last = pick?.pos[pick.pos.length - 1];
  const parent = last?.parentElement;
  if (!parent || parent === state.doc.body || parent === state.doc.documentElement) return;
  const scopes = scopesFor(state.target);
  if (scopes && !scopes.some((s) => s.contains(parent))) return;
  pick.pos[pick.pos.length - 1] = parent;
  pick.neg = pick.neg.filter((n) => !parent.contains(n));
  refine(pick, scopes);
}

function attributesOf(element) {
  return [...element.attributes].map((a) => a.name.replace(/^data-g-(?!match|pos|neg|record|hover)/, ""))
    .filter((name) => !MARKS.includes(name) && name !== "style");
}

function highlight() {
  const doc = state.doc;
  if (!doc) return;
  for (const mark of MARKS.slice(0, 4)) {
    for (const node of doc.querySelectorAll(`[${mark}]`)) node.removeAttribute(mark);
  }
  const record = state.rule.record.css ? select(doc, state.rule.record.css) : [];
  for (const node of record) node.setAttribute("data-g-record", "");
  const pick = targetPick();
  let count = "";
  if (pick && pick.css) {
    const matched = select(doc, pick.css, scopesFor(state.target));
    for (const node of matched) node.setAttribute("data-g-match", "");
    count = `${matched.length} matched`;
  }
  if (pick) {
    for (const node of pick.pos) node.setAttribute("data-g-pos", "");
    for (const node of pick.neg) node.setAttribute("data-g-neg", "");
  }
  $("matched").textContent = count;
}

function setTarget(target) {
  const same = state.target && target && state.target.kind === target.kind && state.target.index === target.index;
  state.target = same ? null : target;
  render();
}

// ---------------------------------------------------------------- the rule's form
function render() {
  $("record-css").value = state.rule.record.css;
  $("record-css").classList.toggle("active", state.target?.kind === "record");
  $("pick-record").classList.toggle("active", state.target?.kind === "record");
  const ui = { state, setTarget, removeAt, render, highlight, status };
  $("fields").replaceChildren(...state.rule.fields.map((f, i) => fieldBlock(ui, f, i)));
  $("links").replaceChildren(...state.rule.links.map((l, i) => linkBlock(ui, l, i)));
  const t = state.target;
  $("target").textContent = !t ? "nothing" : t.kind === "record" ? "the record container"
    : t.kind === "field" ? `field ${state.rule.fields[t.index].name || t.index + 1}` : `link rule ${t.index + 1}`;
  highlight();
}

function removeAt(list, index) {
  list.splice(index, 1);
  state.target = null;
  render();
}

// The rule as its [[rule]] table holds it.
function ruleDocument() {
  const rule = { name: $("rule-name").value.trim(), url: $("rule-url").value.trim() };
  if (state.rule.extra) Object.assign(rule, state.rule.extra);
  if (state.rule.record.css) rule.record = { css: state.rule.record.css };
  else if (state.rule.record.raw) rule.record = state.rule.record.raw;
  rule.field = state.rule.fields.filter((f) => f.raw || f.name || f.css).map((f) => {
    if (f.raw) return f.raw;
    const out = { name: f.name, css: f.css };
    if (f.attr && f.attr !== "text") out.attr = f.attr;
    if (f.multiple) out.multiple = true;
    if (f.required) out.required = true;
    if (f.process.length) out.process = f.process;
    return out;
  });
  if (state.rule.links.length) {
    rule.link = state.rule.links.map((l) => {
      const out = {};
      if (l.css) out.css = l.css;
      if (l.allow.length) out.allow = l.allow;
      if (l.deny.length) out.deny = l.deny;
      return out;
    });
  }
  return rule;
}

// ---------------------------------------------------------------- preview and save
function showProblems(problems) {
  $("problems").replaceChildren(...problems.map((p) => el("li", { text: p })));
}

async function preview() {
  showProblems([]);
  if (!state.samples.length) { showProblems(["fetch a sample page first"]); return; }
  status("evaluating…");
  try {
    const result = await post("/editor/api/preview", {
      rule: ruleDocument(), samples: state.samples.map((s) => s.id), more: state.info.max_more,
      scope: $("preview-wide").checked ? "pattern" : "origin",
    });
    showProblems(result.problems);
    renderPreview(result.rows, ruleDocument().field.map((f) => f.name));
    status(result.problems.length ? "the rule has problems" : "preview ready");
  } catch (error) {
    showProblems([reason(error)]);
    status("");
  }
}

async function save() {
  showProblems([]);
  $("save-status").textContent = "";
  try {
    const saved = await post("/editor/api/save", {
      document: $("doc-name").value.trim(), rule: ruleDocument(),
      samples: state.samples.map((s) => s.id), replaces: state.opened,
    });
    state.opened = ruleDocument().name;
    $("save-status").textContent = `saved ${saved.document} (${saved.samples} samples)`;
    await loadInfo();
  } catch (error) {
    showProblems(reason(error).split("\n"));
  }
}

// ---------------------------------------------------------------- documents
async function loadInfo() {
  state.info = await get("/editor/api/info");
  $("open-row").hidden = !state.info.can_save;
  $("save").disabled = !state.info.can_save;
  $("doc-list").replaceChildren(el("option", { value: "", text: "open a document…" }),
    ...state.info.documents.map((d) => el("option", { value: d, text: d })));
}

let openedDocument = null;
async function chooseDocument() {
  const name = $("doc-list").value;
  $("doc-rules").replaceChildren();
  openedDocument = null;
  if (!name) return;
  openedDocument = await get(`/editor/api/documents/${encodeURIComponent(name)}`);
  $("doc-rules").replaceChildren(...openedDocument.rules.map((r, i) => el("option", { value: i, text: r.name })));
}

function openRule() {
  if (!openedDocument) return;
  const raw = openedDocument.rules[Number($("doc-rules").value || 0)];
  if (!raw) return;
  const { name, url, record, field = [], link, sample, ...extra } = raw;
  state.rule = newRule();
  state.rule.extra = extra;
  state.opened = name;
  $("rule-name").value = name;
  $("rule-url").value = url;
  $("doc-name").value = $("doc-list").value;
  if (record?.css) state.rule.record.css = record.css;
  else if (record) state.rule.record.raw = record;
  state.rule.fields = field.map((f) => (f.css === undefined ? { raw: f } : newPick({
    name: f.name, css: f.css, attr: f.attr || "text", multiple: !!f.multiple, required: !!f.required, process: f.process || [],
  })));
  state.rule.links = (link || []).map((l) => newPick({ css: l.css || "", allow: l.allow || [], deny: l.deny || [] }));
  state.samples = openedDocument.samples[name] || [];
  state.target = null;
  render();
  showSample(state.samples[0]?.id ?? null);
}

// ---------------------------------------------------------------- wiring
function start() {
  $("fetch-form").addEventListener("submit", fetchSample);
  $("page-frame").addEventListener("load", frameLoaded);
  $("overlay").addEventListener("click", clickPage);
  $("overlay").addEventListener("mousemove", hover);
  $("overlay").addEventListener("mouseleave", () => { hovered?.removeAttribute("data-g-hover"); hovered = null; });
  $("pick-record").addEventListener("click", () => setTarget({ kind: "record" }));
  $("clear-record").addEventListener("click", () => { state.rule.record = newPick(); if (state.target?.kind === "record") state.target = null; render(); });
  $("record-css").addEventListener("change", (e) => { state.rule.record = newPick({ css: e.target.value.trim() }); render(); });
  $("add-field").addEventListener("click", () => {
    state.rule.fields.push(newPick({ name: "", attr: "text", multiple: false, required: false, process: [] }));
    setTarget({ kind: "field", index: state.rule.fields.length - 1 });
  });
  $("add-link").addEventListener("click", () => {
    state.rule.links.push(newPick({ allow: [], deny: [] }));
    setTarget({ kind: "link", index: state.rule.links.length - 1 });
  });
  $("pick-parent").addEventListener("click", pickParent);
  $("preview").addEventListener("click", preview);
  $("save").addEventListener("click", save);
  $("doc-list").addEventListener("change", chooseDocument);
  $("open").addEventListener("click", openRule);
  window.addEventListener("resize", () => { if (state.doc) sizeFrame(); });
  loadInfo().then(() => { render(); document.body.dataset.started = "1"; }, (e) => status(reason(e)));
}

start();
