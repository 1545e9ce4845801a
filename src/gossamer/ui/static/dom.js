// Building elements from data: text only (textContent), never HTML from the crawl.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function fmt(value, digits = 0) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (typeof value !== "number") return String(value);
  return value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

export function bytes(value) {
  if (!value) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (value >= 1000 && i < units.length - 1) { value /= 1000; i += 1; }
  return `${fmt(value, 1)} ${units[i]}`;
}

export function table(headers, rows, empty = "none") {
  if (!rows.length) return el("p", { class: "muted", text: empty });
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { text: h })))),
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, c))))));
}

export function card(label, value, id) {
  return el("div", { class: "card" },
    el("div", { class: "value", "data-figure": id, text: value }),
    el("div", { class: "label", text: label }));
}

export function section(title, ...body) {
  return el("section", {}, el("h3", { text: title }), ...body);
}

export function badge(state) {
  return el("span", { class: `badge state-${state}`, text: state });
}
