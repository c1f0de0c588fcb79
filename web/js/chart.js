// Charts as inline SVG: a line (readings over time) and bars (per day). Each chart also
// carries its numbers as a table for screen readers.
import { h } from "./ui.js";

const NS = "http://www.w3.org/2000/svg";
const W = 640, H = 200, PAD = { left: 40, right: 10, top: 12, bottom: 28 };

function svg(tag, attributes, ...children) {
  const element = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children) element.append(child);
  return element;
}

/**
 * `chart({title, labels, values, kind: "line" | "bar", max, marks, markLabel})`: `labels[i]` is
 * the x label of `values[i]` (numbers; `null` leaves a gap). A negative value (a day of refunds)
 * extends the axis below zero. `marks[i]` true shades the span around point `i` (a period when
 * an alert was open), `markLabel` saying what the shading means.
 */
export function chart({ title, labels, values, kind = "line", max, marks = [], markLabel = "marked" }) {
  const top = max ?? Math.max(1, ...values.filter((v) => v !== null));
  const bottom = Math.min(0, ...values.filter((v) => v !== null));
  const innerW = W - PAD.left - PAD.right, innerH = H - PAD.top - PAD.bottom;
  const x = (i) => PAD.left + (values.length <= 1 ? innerW / 2 : (i * innerW) / (values.length - 1));
  const y = (v) => PAD.top + innerH - ((v - bottom) / (top - bottom)) * innerH;
  const figure = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  figure.append(svg("title", {}, title));
  // Shaded spans first, under the grid and the line: each run of marked points, from half way
  // to the point before to half way to the point after.
  const half = values.length <= 1 ? innerW / 2 : innerW / (values.length - 1) / 2;
  for (let i = 0; i < values.length; i++) {
    if (!marks[i] || marks[i - 1]) continue;
    let end = i;
    while (marks[end + 1]) end++;
    const from = Math.max(PAD.left, x(i) - half), to = Math.min(W - PAD.right, x(end) + half);
    figure.append(svg("rect", { class: "mark", x: from, y: PAD.top, width: Math.max(to - from, 2), height: innerH, fill: "#f6dccf" }));
  }
  for (const tick of bottom < 0 ? [bottom, 0, top] : [0, top / 2, top]) {
    figure.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(tick), y2: y(tick), stroke: "#e3e3e8" }));
    figure.append(svg("text", { x: 4, y: y(tick) + 4 }, String(Math.round(tick * 100) / 100)));
  }
  const step = Math.max(1, Math.ceil(labels.length / 6));
  labels.forEach((label, i) => {
    if (i % step === 0) figure.append(svg("text", { x: x(i) - 16, y: H - 8 }, label));
  });
  if (kind === "bar") {
    const width = Math.min(48, Math.max(4, innerW / Math.max(values.length, 1) - 6));
    values.forEach((v, i) => {
      if (v === null) return;
      figure.append(svg("rect", { x: x(i) - width / 2, y: y(Math.max(v, 0)), width, height: Math.abs(y(0) - y(v)), fill: v < 0 ? "#a33a2b" : "#1f5f3f" }));
    });
  } else {
    const points = values.map((v, i) => (v === null ? null : `${x(i)},${y(v)}`)).filter(Boolean);
    figure.append(svg("polyline", { points: points.join(" "), fill: "none", stroke: "#1f5f3f", "stroke-width": 2 }));
    values.forEach((v, i) => {
      if (v !== null) figure.append(svg("circle", { cx: x(i), cy: y(v), r: 3, fill: "#1f5f3f" }));
    });
  }
  const marked = marks.some(Boolean);
  const table = h("table", { class: "sr-only" },
    h("caption", {}, title),
    labels.map((label, i) => h("tr", {}, h("th", { scope: "row" }, label), h("td", {}, values[i] ?? "–"),
      marked ? h("td", {}, marks[i] ? markLabel : "") : null)));
  return h("figure", { class: "chart", "data-marked": marked ? marks.filter(Boolean).length : null },
    h("figcaption", {}, title, marked ? h("span", { class: "muted" }, ` (shaded: ${markLabel})`) : null), figure, table);
}
