// The customer's cart: one vendor's bouquets, then a 15-minute reservation.
import { api } from "../api.js";
import { session } from "../session.js";
import { showCartCount } from "../cart-count.js";
import { attempt, freshnessBadge, h, money, show, statusBadge } from "../ui.js";

export async function cartPage() {
  if (session.role() !== "customer") {
    show(h("h1", {}, "Your cart"), h("p", {}, h("a", { href: "#/signin" }, "Sign in as a customer"), " to fill a cart."));
    return;
  }
  const render = (cart) => {
    showCartCount(cart);
    const rows = cart.items.map((b) => h("tr", { "data-bouquet": b.bouquetId },
      h("td", {}, h("a", { href: `#/bouquets/${b.bouquetId}` }, b.name)),
      h("td", {}, money(b.price)),
      h("td", {}, statusBadge(b.status), " ", freshnessBadge(b.freshness, Boolean(b.vaseId))),
      h("td", {}, h("button", {
        type: "button", class: "secondary", "aria-label": `Remove ${b.name}`,
        onclick: () => attempt(async () => render(await api("DELETE", `/cart/items/${b.bouquetId}`).then(() => api("GET", "/cart")))),
      }, "Remove"))));
    show(
      h("h1", {}, "Your cart"),
      cart.items.length
        ? h("div", {},
            h("p", { class: "muted" }, "One order holds bouquets of one vendor. Reserving holds them for 15 minutes while you pay."),
            h("div", { class: "table-wrap" }, h("table", {},
              h("thead", {}, h("tr", {}, h("th", {}, "Bouquet"), h("th", {}, "Price"), h("th", {}, "Now"), h("th", {}, h("span", { class: "sr-only" }, "Actions")))),
              h("tbody", {}, rows))),
            h("p", {}, h("strong", {}, `Total ${money(cart.total)}`)),
            h("button", {
              type: "button", id: "reserve",
              onclick: (e) => attempt(async () => {
                e.target.disabled = true;
                try {
                  const order = await api("POST", "/orders");
                  showCartCount().catch(() => {});
                  location.hash = `#/orders/${order.orderId}`;
                } finally {
                  e.target.disabled = false;
                }
              }),
            }, "Reserve for 15 minutes"))
        : h("p", {}, "Your cart is empty. ", h("a", { href: "#/" }, "Browse the bouquets.")),
    );
  };
  render(await api("GET", "/cart"));
}
