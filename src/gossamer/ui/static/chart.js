// A small bar chart of pages/s per minute, drawn as SVG by hand.
const NS = "http://www.w3.org/2000/svg";

function svg(tag, attrs) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

export function rateChart(points, { width = 720, height = 180 } = {}) {
  const pad = { left: 44, right: 8, top: 10, bottom: 22 };
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img" });
  const title = svg("title", {});
  const peak = Math.max(0, ...points.map((p) => p.rate));
  title.textContent = `pages/s per minute, peak ${peak}`;
  root.append(title);
  const top = peak > 0 ? niceCeil(peak) : 1;
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  for (const f of [0, 0.5, 1]) {
    const y = pad.top + plotH * (1 - f);
    root.append(svg("line", { x1: pad.left, x2: width - pad.right, y1: y, y2: y, class: "grid" }));
    const label = svg("text", { x: pad.left - 6, y: y + 4, class: "axis", "text-anchor": "end" });
    label.textContent = formatRate(top * f);
    root.append(label);
  }
  const step = plotW / Math.max(points.length, 1);
  points.forEach((point, i) => {
    const h = (point.rate / top) * plotH;
    const bar = svg("rect", {
      x: pad.left + i * step + 1, y: pad.top + plotH - h,
      width: Math.max(step - 2, 1), height: Math.max(h, 0), class: "bar",
    });
    const tip = svg("title", {});
    tip.textContent = `${clock(point.t)}: ${point.rate} pages/s`;
    bar.append(tip);
    root.append(bar);
  });
  for (const i of [0, Math.floor(points.length / 2), points.length - 1]) {
    if (!points[i]) continue;
    const label = svg("text", { x: pad.left + i * step + step / 2, y: height - 6,
      class: "axis", "text-anchor": "middle" });
    label.textContent = clock(points[i].t);
    root.append(label);
  }
  return root;
}

function niceCeil(value) {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 5, 10]) if (m * power >= value) return m * power;
  return 10 * power;
}

function formatRate(value) {
  return value >= 10 ? String(Math.round(value)) : String(Math.round(value * 10) / 10);
}

function clock(seconds) {
  return new Date(seconds * 1000).toTimeString().slice(0, 5);
}
