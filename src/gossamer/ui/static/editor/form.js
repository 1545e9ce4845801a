// The rule's form: a block per field (name, selector, what it reads, processors) and per
// link rule (region, allow and deny patterns). `ui` holds the editor's state and actions.
import { el } from "/static/dom.js";

export function fieldBlock(ui, field, index) {
  const { state } = ui;
  const active = state.target?.kind === "field" && state.target.index === index;
  if (field.raw) {
    return el("div", { class: "field" }, el("strong", { text: field.raw.name }),
      el("span", { class: "muted small", text: " (not a CSS field: kept as it is) " }),
      el("button", { type: "button", text: "Remove", onclick: () => ui.removeAt(state.rule.fields, index) }));
  }
  const attrs = ["text", "html", ...new Set([...(field.attrs || []), ...(field.attr && !["text", "html"].includes(field.attr) ? [field.attr] : [])])];
  return el("div", { class: `field${active ? " active" : ""}`, "data-index": index },
    el("div", { class: "row" },
      el("input", { class: "field-name", value: field.name, placeholder: "field name", "aria-label": "field name",
        spellcheck: "false", oninput: (e) => { field.name = e.target.value; } }),
      el("button", { type: "button", class: `pick${active ? " active" : ""}`, text: "Pick",
        onclick: () => ui.setTarget({ kind: "field", index }) }),
      el("button", { type: "button", text: "×", title: "remove the field", onclick: () => ui.removeAt(state.rule.fields, index) })),
    el("div", { class: "row" },
      el("input", { class: "field-css mono", value: field.css, placeholder: "CSS selector (pick or type)",
        "aria-label": "field selector", spellcheck: "false",
        onchange: (e) => { field.css = e.target.value.trim(); field.pos = []; field.neg = []; ui.highlight(); } }),
      el("select", { class: "field-attr", "aria-label": "what the field reads",
        onchange: (e) => { field.attr = e.target.value; } },
        attrs.map((a) => el("option", { value: a, text: a === "text" || a === "html" ? a : `@${a}`, selected: a === (field.attr || "text") })))),
    el("div", { class: "checks" },
      el("label", {}, el("input", { type: "checkbox", class: "field-required", checked: field.required,
        onchange: (e) => { field.required = e.target.checked; } }), " required"),
      el("label", {}, el("input", { type: "checkbox", class: "field-multiple", checked: field.multiple,
        onchange: (e) => { field.multiple = e.target.checked; } }), " every match (a list)")),
    el("div", { class: "procs" }, field.process.map((spec, i) => el("span", { class: "chip" }, describe(spec),
      el("button", { type: "button", text: "×", title: "remove", onclick: () => { field.process.splice(i, 1); ui.render(); } })))),
    processorAdder(ui, field));
}

function describe(spec) {
  if (typeof spec === "string") return spec;
  return Object.entries(spec).map(([k, v]) => `${k} ${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ");
}

function processorAdder(ui, field) {
  const name = el("select", { class: "proc-name", "aria-label": "processor" },
    ui.state.info.processors.map((p) => el("option", { value: p, text: p })));
  const arg = el("input", { class: "proc-arg mono", placeholder: "argument", "aria-label": "processor argument", spellcheck: "false" });
  const option = el("input", { class: "proc-option mono", placeholder: "group / with", "aria-label": "processor option", spellcheck: "false" });
  const add = () => {
    const spec = processorSpec(ui, name.value, arg.value, option.value);
    if (spec !== null) { field.process.push(spec); ui.render(); }
  };
  return el("div", { class: "row" }, name, arg, option,
    el("button", { type: "button", class: "proc-add", text: "Add", onclick: add }));
}

function processorSpec(ui, name, argument, option) {
  const options = ui.state.info.arguments[name];
  const simple = !options || (argument === "" && ["join", "split", "date"].includes(name));
  if (simple) return name;
  if (argument === "" && name !== "default") { ui.status(`${name} needs an argument`); return null; }
  let value = argument;
  if (name === "default") { try { value = JSON.parse(argument); } catch { value = argument; } }
  const spec = { [name]: value };
  if (option !== "" && options.length) spec[options[0]] = /^\d+$/.test(option) ? Number(option) : option;
  return spec;
}

export function linkBlock(ui, link, index) {
  const { state } = ui;
  const active = state.target?.kind === "link" && state.target.index === index;
  const lines = (text) => text.split("\n").map((s) => s.trim()).filter(Boolean);
  return el("div", { class: `link${active ? " active" : ""}`, "data-index": index },
    el("div", { class: "row" },
      el("input", { class: "link-css mono", value: link.css, placeholder: "region (default: every link)",
        "aria-label": "link region selector", spellcheck: "false",
        onchange: (e) => { link.css = e.target.value.trim(); link.pos = []; link.neg = []; ui.highlight(); } }),
      el("button", { type: "button", class: `pick${active ? " active" : ""}`, text: "Pick",
        onclick: () => ui.setTarget({ kind: "link", index }) }),
      el("button", { type: "button", text: "×", onclick: () => ui.removeAt(state.rule.links, index) })),
    el("label", {}, "allow (a regex a line)", el("textarea", { class: "link-allow", spellcheck: "false",
      oninput: (e) => { link.allow = lines(e.target.value); } }, link.allow.join("\n"))),
    el("label", {}, "deny (a regex a line)", el("textarea", { class: "link-deny", spellcheck: "false",
      oninput: (e) => { link.deny = lines(e.target.value); } }, link.deny.join("\n"))));
}
