// The administrators' page: open a shop, make someone its member, set a shop's own commission,
// and suspend or reinstate shops (a suspended shop's bouquets leave the storefront at once); the
// commission earned per day and shop. The list follows the catalogue channel, where shops
// opening, suspended and reinstated are announced.
import { api } from "../api.js";
import { live } from "../live.js";
import { session } from "../session.js";
import { attempt, clearErrors, drawRows, field, h, money, refresh, say, serially, show, showErrors, when } from "../ui.js";

function shopRow(shop, reload) {
  const suspended = Boolean(shop.suspendedAt);
  const toggle = h("button", {
    type: "button",
    class: "secondary",
    "aria-label": `${suspended ? "Reinstate" : "Suspend"} ${shop.name}`,
    onclick: () => attempt(async () => {
      await api(suspended ? "DELETE" : "PUT", `/vendors/${shop.vendorId}/suspension`);
      await reload();
    }),
  }, suspended ? "Reinstate" : "Suspend");
  // The shop's own commission, in basis points; empty: the marketplace's.
  const rate = h("input", {
    name: "basisPoints", type: "number", min: 0, max: 10000, step: 1, inputmode: "numeric",
    value: shop.commission ?? "", placeholder: "marketplace's",
    "aria-label": `Commission of ${shop.name} in basis points`, style: "width:8em",
  });
  const commission = h("form", {
    class: "row",
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        const basisPoints = rate.value === "" ? null : Number(rate.value);
        await api("PUT", `/vendors/${shop.vendorId}/commission`, { body: { basisPoints } });
        await reload();
      });
    },
  }, rate, h("button", { type: "submit", class: "secondary", "aria-label": `Save the commission of ${shop.name}` }, "Save"));
  return h("tr", { "data-shop": shop.vendorId, "data-suspended": suspended ? "yes" : "no", "data-commission": shop.commission ?? "" },
    h("td", {}, shop.name),
    h("td", {}, h("code", {}, shop.vendorId)),
    h("td", {}, suspended
      ? h("span", { class: "badge status-rejected" }, `suspended ${when(shop.suspendedAt)}`)
      : h("span", { class: "badge status-available" }, "trading")),
    h("td", {}, commission),
    h("td", {}, toggle));
}

/** The marketplace's commission (its fees less those refunded) per day and shop over the last
 *  30 days, each shop by its name where the list knows it. */
function commissionSection(names) {
  const body = h("tbody", {});
  const foot = h("tfoot", {});
  const state = h("p", { class: "muted", role: "status" });
  const load = async () => {
    let report;
    try {
      report = await api("GET", "/commission");
    } catch (error) {
      state.textContent = `The commission could not be read: ${error.message}`;
      return;
    }
    state.textContent = `From ${report.from} to ${report.to} (UTC days).`;
    const days = [...report.days].sort((a, b) => b.date.localeCompare(a.date) || (names.get(a.vendorId) ?? a.vendorId).localeCompare(names.get(b.vendorId) ?? b.vendorId));
    body.replaceChildren(...days.map((d) => h("tr", { "data-date": d.date, "data-shop": d.vendorId, "data-amount": d.commission.amount },
      h("td", {}, d.date),
      h("td", {}, names.get(d.vendorId) ?? h("code", {}, d.vendorId)),
      h("td", { class: "amount" }, money(d.commission)))));
    if (!days.length) body.append(h("tr", {}, h("td", { colspan: 3, class: "muted" }, "No commission in this period.")));
    // The period's total per currency (shown rounded to the currency's minor unit).
    const totals = new Map();
    for (const { commission: { amount, currency } } of days) totals.set(currency, (totals.get(currency) ?? 0) + Number(amount));
    foot.replaceChildren(...[...totals].map(([currency, sum]) => h("tr", { "data-total": currency },
      h("th", { scope: "row", colspan: 2 }, "Total"), h("td", { class: "amount" }, money({ amount: String(sum), currency })))));
  };
  return {
    section: h("section", {}, h("h2", {}, "Commission (30 days)"), state,
      h("div", { class: "table-wrap" }, h("table", { id: "commission" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Day"), h("th", { scope: "col" }, "Shop"), h("th", { scope: "col", class: "amount" }, "Commission"))),
        body, foot))),
    load,
  };
}

export async function adminPage() {
  if (session.role() !== "admin") {
    show(h("h1", {}, "Shops"), h("p", {}, h("a", { href: "#/signin" }, "Sign in as an administrator"), " to manage shops."));
    return;
  }
  const body = h("tbody", {});
  const names = new Map();
  const commission = commissionSection(names);
  // A shop's row is redrawn only when the shop changed: an event about another shop leaves a
  // commission being typed as it is.
  const load = serially(async () => {
    const rows = [];
    let cursor = null;
    do {
      const page = await api("GET", `/vendors?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      rows.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    drawRows(body, rows, (shop) => shop.vendorId, (shop) => shopRow(shop, load));
    for (const shop of rows) names.set(shop.vendorId, shop.name);
  });
  const create = h("form", {
    novalidate: true,
    "aria-label": "Open a shop",
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        clearErrors(create);
        const name = create.elements.namedItem("name").value;
        try {
          const shop = await api("POST", "/vendors", { body: { name } });
          create.reset();
          say(create, `${shop.name} is open: its id is ${shop.vendorId}.`);
        } catch (error) {
          showErrors(create, error);
          return;
        }
        await load();
      });
    },
  }, field("Shop name", { name: "name", id: "shop-name", required: true }),
  h("p", {}, h("button", { type: "submit" }, "Open shop")));
  const invite = h("form", {
    novalidate: true,
    "aria-label": "Add a member",
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        clearErrors(invite);
        const vendorId = invite.elements.namedItem("vendorId").value.trim();
        const email = invite.elements.namedItem("email").value.trim();
        try {
          await api("POST", `/vendors/${encodeURIComponent(vendorId)}/members`, { body: { email } });
        } catch (error) {
          showErrors(invite, error);
          return;
        }
        invite.reset();
        say(invite, `${email} is a member of the shop; they sign in with that address.`);
      });
    },
  }, field("Shop id", { name: "vendorId", id: "member-shop", required: true }),
  field("Email", { name: "email", id: "member-email", type: "email", required: true }),
  h("p", {}, h("button", { type: "submit" }, "Add member")));
  show(h("h1", {}, "Shops"),
    h("section", {}, h("h2", {}, "Every shop"),
      h("div", { class: "table-wrap" }, h("table", { id: "shops" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Id"), h("th", { scope: "col" }, "State"), h("th", { scope: "col" }, "Commission (bp)"), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Action")))),
        body))),
    commission.section,
    h("section", {}, h("h2", {}, "Open a shop"), create),
    h("section", {}, h("h2", {}, "Add a member"), invite));
  await load();
  await commission.load();
  live.onReconnect.add(() => refresh(async () => { await load(); await commission.load(); }));
  return live.subscribe("catalogue", (event) => {
    if (event.name.startsWith("Vendor")) refresh(load);
  });
}
