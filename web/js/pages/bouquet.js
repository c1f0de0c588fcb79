// One bouquet: status, live freshness and, when it stands in a vase, its freshness history.
import { api } from "../api.js";
import { chart } from "../chart.js";
import { freshnessBadge, h, priceTag, show, statusBadge, when } from "../ui.js";
import { addToCart, follow } from "./catalogue.js";
import { picture } from "../photo.js";

export async function bouquetPage(id) {
  let current = await api("GET", `/bouquets/${id}`);
  const history = [];
  const body = h("section", { "data-bouquet": id });
  const render = (bouquet) => {
    if (bouquet.gone) {
      body.replaceChildren(h("p", { id: "bouquet-gone" }, bouquet.pastItsBest
        ? "This bouquet is past its best: its florist has taken it off sale."
        : "This bouquet is no longer listed."));
      return;
    }
    current = bouquet;
    if (bouquet.freshness !== null && bouquet.freshness !== undefined) {
      history.push([new Date().toLocaleTimeString(), bouquet.freshness]);
    }
    // (The DOM's replaceChildren would write a null as "null": the absent parts are left out.)
    body.replaceChildren(...[
      h("h1", {}, bouquet.name),
      h("div", { class: "hero" }, picture(bouquet, { sizes: "(max-width: 680px) 100vw, 640px", eager: true })),
      h("p", {}, bouquet.description || ""),
      h("p", { class: "row" }, priceTag(bouquet), statusBadge(bouquet.status), freshnessBadge(bouquet.freshness, Boolean(bouquet.vaseId))),
      bouquet.reservedUntil ? h("p", { class: "muted" }, `Held until ${when(bouquet.reservedUntil)}`) : null,
      bouquet.status === "withdrawn" ? h("p", { id: "bouquet-gone" }, bouquet.pastItsBest
        ? "This bouquet is past its best: its florist has taken it off sale."
        : "This bouquet is no longer on sale.") : null,
      addToCart(bouquet),
      bouquet.vaseId
        ? h("div", {}, h("h2", {}, "Freshness while you watch"),
            history.length > 1
              ? chart({ title: "Freshness score", labels: history.map(([t]) => t), values: history.map(([, v]) => v), max: 100 })
              : h("p", { class: "muted" }, "It stands in a smart vase; its freshness updates here as the vase reports."))
        : h("p", { class: "muted" }, "Not in a smart vase: no live freshness."),
    ].filter(Boolean));
  };
  render(current);
  show(h("p", {}, h("a", { href: "#/" }, "← Catalogue")), body);
  return follow(`bouquet:${id}`, (_, apply) => apply(current), render);
}
