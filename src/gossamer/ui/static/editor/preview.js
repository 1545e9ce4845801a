// The preview: each page's items as table rows, a column per field, with the rule's errors.
import { el } from "/static/dom.js";

export function renderPreview(rows, names) {
  const body = [];
  let items = 0;
  for (const row of rows) {
    const page = el("td", { title: row.url }, el("span", { text: row.url }),
      el("div", { class: "muted small", text: row.sample ? "sample" : "another page" }));
    if (row.fetch_error) {
      body.push(el("tr", { class: "page-row" }, page, el("td", { colspan: names.length + 2, class: "errors", text: row.fetch_error })));
      continue;
    }
    items += row.count;
    const errors = el("td", { class: "errors", text: row.errors.join("; ") });
    const links = row.links === null ? "own links" : `${row.links.length} links`;
    if (!row.items.length) {
      body.push(el("tr", { class: "page-row" }, page, el("td", { colspan: names.length, class: "muted",
        text: row.rule === null ? "the URL pattern does not match this page" : "no items" }), errors, el("td", { text: links })));
    }
    row.items.forEach((item, i) => {
      body.push(el("tr", { class: i === 0 ? "page-row item" : "item" }, i === 0 ? page : el("td"),
        names.map((n) => el("td", { class: item[n] === null ? "muted" : "", text: item[n] === null ? "null" : typeof item[n] === "string" ? item[n] : JSON.stringify(item[n]) })),
        i === 0 ? errors : el("td"), i === 0 ? el("td", { text: links }) : el("td")));
    });
  }
  document.getElementById("preview-table").replaceChildren(el("table", { id: "preview-results" },
    el("thead", {}, el("tr", {}, el("th", { text: "page" }), names.map((n) => el("th", { text: n })),
      el("th", { text: "errors" }), el("th", { text: "follows" }))),
    el("tbody", {}, body)));
  document.getElementById("preview-summary").textContent = `${items} items on ${rows.length} pages`;
  document.getElementById("preview-box").hidden = false;
}
