// The storefront: available bouquets with live freshness and status, and each shop's rating.
import { api } from "../api.js";
import { live } from "../live.js";
import { session } from "../session.js";
import { showCartCount } from "../cart-count.js";
import { picture } from "../photo.js";
import { place, tomorrow } from "../place.js";
import { attempt, clearErrors, field, freshnessBadge, h, money, notify, priceTag, ratingBadge, refresh, show, showErrors, statusBadge } from "../ui.js";

// How old a catalogue page may be: the edge keeps a copy for 5 s (CatalogueCachePolicy).
const EDGE_MS = 5000;

/** "Add to cart" for a customer; a sign-in link for everyone else. */
export function addToCart(bouquet) {
  if (session.role() !== "customer") {
    return h("a", { href: "#/signin", class: "muted" }, "Sign in as a customer to buy");
  }
  // Said beside the button, where the eye is, as well as at the top.
  const said = h("span", { class: "muted added", role: "status" });
  const button = h("button", {
    type: "button",
    "aria-label": `Add to cart: ${bouquet.name}`,
    disabled: bouquet.status !== "available" || bouquet.suspended,
    onclick: () => attempt(async () => {
      const cart = await api("PUT", `/cart/items/${bouquet.bouquetId}`);
      said.textContent = "In your cart.";
      notify(`${bouquet.name} is in your cart.`, "ok");
      await showCartCount(cart);
    }),
  }, "Add to cart");
  return h("span", { class: "row" }, button, said);
}

/** A bouquet's card. `shop: false` on its shop's own page, where the shop's name, rating and
 *  link would only repeat the page's. */
export function card(bouquet, { shop = true } = {}) {
  const fee = bouquet.deliveryFee;
  return h("article", { class: "card", "data-bouquet": bouquet.bouquetId, "data-vendor": bouquet.vendorId, "data-version": bouquet.version,
    "data-fee": fee ? `${fee.amount} ${fee.currency}` : "" },
    picture(bouquet),
    h("h3", {}, h("a", { href: `#/bouquets/${bouquet.bouquetId}` }, bouquet.name)),
    shop && bouquet.vendorName ? h("p", { class: "muted shop", "data-shop": bouquet.vendorId }, "from ",
      h("button", { type: "button", class: "link", "data-only-shop": bouquet.vendorId, "data-shop-name": bouquet.vendorName,
        "aria-label": `Only ${bouquet.vendorName}'s bouquets` }, bouquet.vendorName)) : null,
    shop ? h("p", { class: "row muted shop-rating", "data-shop-rating": bouquet.vendorId },
      ratingBadge(bouquet.shopRating),
      h("a", { href: `#/shops/${bouquet.vendorId}`, "aria-label": `Shop page: ${bouquet.vendorName ?? "the shop"}` }, "Shop page")) : null,
    h("p", { class: "muted" }, bouquet.description || ""),
    h("div", { class: "row spread" }, priceTag(bouquet),
      h("span", { class: "row" }, statusBadge(bouquet.status), freshnessBadge(bouquet.freshness, Boolean(bouquet.vaseId)))),
    fee ? h("p", { class: "muted delivery-fee", "data-delivery-fee": fee.amount }, `delivery ${money(fee)}`) : null,
    h("div", { class: "row", style: "margin-top:8px" }, addToCart(bouquet)));
}

/** Shows `rating` on `card` (its shop's), unless it shows that already: a card is not redrawn for
 *  it, so what the card told the customer (e.g. "In your cart.") stays. */
export function showRating(card, rating) {
  const line = card.querySelector("[data-shop-rating]");
  const badge = ratingBadge(rating);
  const shown = line?.querySelector(".rating");
  if (!line || !badge || shown?.outerHTML === badge.outerHTML) return;
  if (shown) shown.replaceWith(badge);
  else line.prepend(badge);
}

// A shop's events: its suspension, its reviews and its rating (the pages say what they mean).
const SHOP_EVENTS = new Set(["VendorSuspended", "VendorReinstated", "ShopRatingChanged",
  "ReviewWritten", "ReviewEdited", "ReviewAnswered", "ReviewHidden"]);

/** Follows one bouquet's changes: `render(bouquet)` with the bouquet as it is now; a shop's
 *  events go to `onShop(name, vendorId, event)`. With `vendorId`, one shop's only. */
export function follow(channel, bouquetOf, render, onShop, vendorId) {
  const versions = new Map();
  const reread = async (id) => {
    try {
      const bouquet = await api("GET", `/bouquets/${id}`);
      if ((versions.get(id) ?? 0) > bouquet.version) return;
      versions.set(id, bouquet.version);
      render(bouquet);
    } catch (error) {
      if (error.status === 404) render({ bouquetId: id, gone: true });
    }
  };
  return live.subscribe(channel, (event) => {
    if (vendorId && event.data?.vendorId && event.data.vendorId !== vendorId) return;
    // A shop suspended or reinstated (its bouquets leave or come back), reviewed or rated.
    if (SHOP_EVENTS.has(event.name)) {
      onShop?.(event.name, event.data.vendorId, event);
      return;
    }
    if (event.name === "VendorOnboarded") return;
    if (event.name === "BouquetFreshnessChanged") {
      const id = event.data.bouquetId;
      if ((versions.get(id) ?? 0) >= event.aggregateVersion) return;
      versions.set(id, event.aggregateVersion);
      bouquetOf(id, (bouquet) => render({ ...bouquet, freshness: event.data.freshness, version: event.aggregateVersion }));
      return;
    }
    // The frame carries the bouquets as the storefront shows them (below); without them, a
    // markdown is applied from the event itself, and a bouquet past its best leaves at once,
    // as a withdrawn one does.
    if (!event.bouquets?.length && event.name === "BouquetRepriced") {
      const id = event.data.bouquetId;
      if ((versions.get(id) ?? 0) >= event.aggregateVersion) return;
      versions.set(id, event.aggregateVersion);
      const { price, listPrice, step, freshness } = event.data;
      bouquetOf(id, (bouquet) => render({ ...bouquet, price, listPrice, markdown: step, freshness, version: event.aggregateVersion }));
      return;
    }
    if (!event.bouquets?.length && event.name === "BouquetPastItsBest") {
      const id = event.data.bouquetId;
      if ((versions.get(id) ?? 0) >= event.aggregateVersion) return;
      versions.set(id, event.aggregateVersion);
      render({ bouquetId: id, gone: true, pastItsBest: true });
      return;
    }
    // The frame carries the bouquets as the storefront shows them (the planner read them once
    // for every watcher): apply them, newest version wins. Without them, read each, and again
    // once the edge's copy (5 s) has run out: the first read may be the edge's older one.
    if (event.bouquets?.length) {
      for (const bouquet of event.bouquets) {
        if ((versions.get(bouquet.bouquetId) ?? 0) > bouquet.version) continue;
        versions.set(bouquet.bouquetId, bouquet.version);
        render(event.name === "BouquetPastItsBest" ? { ...bouquet, pastItsBest: true } : bouquet);
      }
      return;
    }
    const ids = event.data.bouquetIds ?? [event.data.bouquetId ?? event.aggregateId];
    for (const id of ids) {
      reread(id);
      setTimeout(() => reread(id), 6000);
    }
  });
}

export async function catalogue() {
  const grid = h("div", { class: "grid", id: "catalogue" });
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Show more");
  const known = new Map();
  // Each shop's rating, newest known first: a live frame's (at its version), or a page's (which
  // may be the edge's copy, up to 5 s old: it does not undo a frame heard in that time).
  const ratings = new Map();
  const noteRating = (vendorId, rating, at, version = 0) => {
    const held = ratings.get(vendorId);
    const older = held && (held.at > at || (version > 0 && held.version >= version));
    if (!rating || older) return false;
    ratings.set(vendorId, { rating, at, version: Math.max(version ?? 0, held?.version ?? 0) });
    return true;
  };
  const noteRatings = (items, asked) => {
    for (const b of items) noteRating(b.vendorId, b.shopRating, asked - EDGE_MS);
  };
  let cursor = null;
  // The filters and the order, as the API takes them (no Scan: a filter on the index that
  // serves the order).
  let filters = {};
  const matches = (b) =>
    (!filters.vendorId || b.vendorId === filters.vendorId)
    && (!filters.minPrice || Number(b.price.amount) >= Number(filters.minPrice))
    && (!filters.maxPrice || Number(b.price.amount) <= Number(filters.maxPrice))
    && (!filters.minFreshness || (b.freshness ?? -1) >= Number(filters.minFreshness));
  // The filters, then where and when (the customer's choice, if any: only what can arrive).
  const query = () => Object.entries(filters).filter(([, v]) => v).map(([k, v]) => `&${k}=${encodeURIComponent(v)}`).join("") + place.query();
  const empty = () => {
    const chosen = place.get();
    return h("p", { class: "muted" }, chosen
      ? `No shop delivers to ${chosen.postcode} (${chosen.country}) on ${chosen.date} right now: change where and when, or browse everything.`
      : "No bouquets on sale right now.");
  };
  // With a place chosen, a bouquet heard of live but not read with it (no delivery fee: it may
  // not reach that door) is not drawn: the page is read again instead, and once more when the
  // edge's copy (5 s) has run out.
  let rereading = null;
  const reloadSoon = () => {
    if (rereading) return;
    rereading = setTimeout(() => {
      rereading = null;
      refresh(reload);
      setTimeout(() => refresh(reload), 6000);
    }, 300);
  };
  const put = (update) => {
    // A single bouquet's read carries no shop name or rating: keep the ones the page gave.
    const held = known.get(update.bouquetId);
    if (place.get() && !held && !update.deliveryFee && !update.gone) {
      reloadSoon();
      return;
    }
    const bouquet = { vendorName: held?.vendorName, deliveryFee: held?.deliveryFee, ...update };
    bouquet.shopRating = ratings.get(bouquet.vendorId)?.rating ?? bouquet.shopRating ?? known.get(update.bouquetId)?.shopRating;
    const existing = grid.querySelector(`[data-bouquet="${bouquet.bouquetId}"]`);
    if (bouquet.gone || bouquet.status === "withdrawn" || bouquet.suspended || !matches(bouquet)) {
      existing?.remove();
      known.delete(bouquet.bouquetId);
      return;
    }
    known.set(bouquet.bouquetId, bouquet);
    // An unchanged card stays as it is (with what it told the customer), unless a page now
    // names the shop that a live read drew it without.
    const named = !bouquet.vendorName || existing?.querySelector(".shop");
    const fee = bouquet.deliveryFee ? `${bouquet.deliveryFee.amount} ${bouquet.deliveryFee.currency}` : "";
    if (existing && existing.dataset.version === String(bouquet.version) && named && (existing.dataset.fee ?? "") === fee) {
      showRating(existing, bouquet.shopRating);
      return;
    }
    if (existing) existing.replaceWith(card(bouquet));
    else grid.append(card(bouquet));
  };
  const load = async () => {
    const asked = Date.now();
    const page = await api("GET", `/bouquets?limit=24${query()}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    noteRatings(page.items, asked);
    page.items.forEach(put);
    cursor = page.nextCursor ?? null;
    more.hidden = !cursor;
  };
  const filterForm = h("form", {
    class: "filters", id: "filters", "aria-label": "Filter the bouquets", novalidate: true,
    onsubmit: (e) => {
      e.preventDefault();
      const data = Object.fromEntries(new FormData(filterForm));
      filters = { ...filters, minPrice: data.minPrice, maxPrice: data.maxPrice, minFreshness: data.minFreshness, sort: data.sort };
      clearErrors(filterForm);
      attempt(async () => {
        try {
          await reload();
        } catch (error) {
          showErrors(filterForm, error);
        }
      });
    },
  },
  h("div", { class: "row" },
    field("From", { name: "minPrice", inputmode: "decimal", size: 6 }, "€"),
    field("To", { name: "maxPrice", inputmode: "decimal", size: 6 }, "€"),
    field("Freshness", { tag: "select", name: "minFreshness", options: [["", "any"], ["40", "40 or more"], ["70", "70 or more"]] }),
    field("Sort", { tag: "select", name: "sort", options: [["", "newest first"], ["freshness", "freshest first"], ["price", "price, low to high"], ["-price", "price, high to low"], ["rating", "best rated first"]] }),
    h("p", {}, h("button", { type: "submit", class: "secondary" }, "Show"))),
  h("p", { class: "muted" }, "Scores change live; the order is the one the page was read in."));
  more.addEventListener("click", () => attempt(load));
  // One shop's bouquets: its name on a card narrows the page to it (newest first: the API
  // reads one shop's partition in that order only), until "All shops".
  const sortField = filterForm.querySelector('select[name="sort"]');
  const onlyShop = h("p", { class: "row", id: "only-shop", hidden: true });
  const chooseShop = (vendorId, name) => {
    filters = { ...filters, vendorId, sort: vendorId ? "" : sortField.value };
    if (vendorId) sortField.value = "";
    sortField.disabled = Boolean(vendorId);
    onlyShop.hidden = !vendorId;
    onlyShop.replaceChildren(...(vendorId ? [
      h("span", {}, `Only ${name}'s bouquets, newest first.`),
      h("button", { type: "button", class: "secondary", onclick: () => chooseShop(null) }, "All shops"),
    ] : []));
    attempt(reload);
  };
  grid.addEventListener("click", (e) => {
    const shop = e.target.closest("[data-only-shop]");
    if (shop) chooseShop(shop.dataset.onlyShop, shop.dataset.shopName);
  });
  // Where and when: asked once (never in the way: the catalogue shows meanwhile), shown at the
  // top with a way to change it, or to clear it and browse everything.
  const placeBox = h("section", { id: "place", class: "place", "aria-label": "Where and when" });
  const showPlace = (editing = false) => {
    const chosen = place.get();
    if (chosen && !editing) {
      placeBox.replaceChildren(h("p", { class: "row", id: "place-chosen" },
        h("span", {}, "Delivering to ", h("strong", {}, `${chosen.postcode} (${chosen.country})`), " on ", h("strong", {}, chosen.date), "."),
        h("button", { type: "button", class: "secondary", onclick: () => showPlace(true) }, "Change"),
        h("button", { type: "button", class: "secondary", onclick: () => choosePlace(null) }, "Browse everything")));
      return;
    }
    if (!editing && place.asked()) {
      placeBox.replaceChildren(h("p", { class: "row", id: "place-chosen" },
        h("span", {}, "Every shop's bouquets, wherever they deliver."),
        h("button", { type: "button", class: "secondary", onclick: () => showPlace(true) }, "Choose where and when")));
      return;
    }
    const before = place.remembered();
    const form = h("form", {
      id: "place-form", class: "place-form", novalidate: true, "aria-labelledby": "place-title",
      onsubmit: (e) => {
        e.preventDefault();
        const data = Object.fromEntries(new FormData(form));
        clearErrors(form);
        const missing = ["postcode", "country", "date"].filter((k) => !String(data[k] ?? "").trim());
        if (missing.length) {
          showErrors(form, { body: { errors: missing.map((k) => ({ field: k, message: "is required" })) } });
          return;
        }
        choosePlace({ postcode: data.postcode.trim(), country: data.country.trim(), date: data.date }, form);
      },
    },
    h("h2", { id: "place-title" }, "Where and when?"),
    h("p", { class: "muted" }, "Only the bouquets that can reach that door on that day, each with its delivery fee."),
    h("div", { class: "row" },
      field("Postcode", { name: "postcode", id: "place-postcode", required: true, maxlength: 10, size: 8, autocomplete: "postal-code", value: before?.postcode ?? "" }),
      field("Country", { name: "country", id: "place-country", required: true, maxlength: 2, size: 3, autocomplete: "country", value: before?.country ?? "FR" }, "2 letters"),
      field("Delivery date", { name: "date", id: "place-date", type: "date", required: true, value: place.get()?.date ?? tomorrow() }),
      h("p", {}, h("button", { type: "submit" }, "Show what can arrive")),
      h("p", {}, h("button", { type: "button", class: "secondary", onclick: () => choosePlace(null) }, "Browse everything"))));
    placeBox.replaceChildren(form);
  };
  // A new place (or none): the page read again with it; refused, the previous one is kept.
  const choosePlace = (chosen, form) => attempt(async () => {
    const before = place.remembered();
    if (chosen) place.set(chosen);
    else place.clear();
    try {
      await reload();
      showPlace();
    } catch (error) {
      place.restore(before);
      if (form) showErrors(form, error);
      else throw error;
    }
  });
  showPlace();
  show(h("h1", {}, "Fresh bouquets"), placeBox, filterForm, onlyShop, grid, more);
  // A suspended shop's cards leave at once; reinstated, they are read again one by one (the
  // catalogue page may come from the edge's 5-second cache), then the page after that window.
  const withheld = new Map();
  const onShop = (name, vendorId, event) => {
    // A shop's new rating, on each of its cards (the order stays the one the page was read in).
    if (name === "ShopRatingChanged") {
      if (!noteRating(vendorId, event.data.rating, Date.now(), event.aggregateVersion)) return;
      for (const card of grid.querySelectorAll(`[data-vendor="${vendorId}"]`)) showRating(card, event.data.rating);
      return;
    }
    if (name !== "VendorSuspended" && name !== "VendorReinstated") return;
    if (name === "VendorSuspended") {
      for (const card of grid.querySelectorAll(`[data-vendor="${vendorId}"]`)) {
        withheld.set(card.dataset.bouquet, vendorId);
        known.delete(card.dataset.bouquet);
        card.remove();
      }
      return;
    }
    for (const [id, vendor] of withheld) {
      if (vendor !== vendorId) continue;
      withheld.delete(id);
      api("GET", `/bouquets/${id}`).then(put).catch(() => {});
    }
    setTimeout(() => refresh(reload), 6000);
  };
  const stop = follow("catalogue", (id, render) => known.has(id) && render(known.get(id)), put, onShop);
  // After a (re)connection, what was missed is read again: the first page replaces the grid in
  // one step once it has arrived, so the storefront never shows empty meanwhile (the socket's
  // first open comes right after the first load).
  const reload = async () => {
    const asked = Date.now();
    const page = await api("GET", `/bouquets?limit=24${query()}`);
    noteRatings(page.items, asked);
    const onSale = new Set(page.items.map((b) => b.bouquetId));
    for (const stale of grid.querySelectorAll("[data-bouquet]")) {
      if (!onSale.has(stale.dataset.bouquet)) {
        known.delete(stale.dataset.bouquet);
        stale.remove();
      }
    }
    page.items.forEach(put);
    // Cards kept from before move to the page's order (only when it differs: moving a card
    // would take the keyboard's focus from it).
    const inOrder = page.items.map((b) => grid.querySelector(`[data-bouquet="${b.bouquetId}"]`)).filter(Boolean);
    const current = [...grid.querySelectorAll(":scope > [data-bouquet]")];
    if (inOrder.some((c, i) => current[i] !== c)) grid.append(...inOrder);
    grid.querySelector(":scope > p.muted")?.remove();
    if (!page.items.length) grid.append(empty());
    cursor = page.nextCursor ?? null;
    more.hidden = !cursor;
  };
  live.onReconnect.add(() => refresh(reload));
  try {
    await load();
  } catch (error) {
    // A remembered place the API no longer takes: ask again, and show everything meanwhile.
    if (!place.get() || error.status !== 400) throw error;
    place.restore(null);
    showPlace(true);
    await load();
  }
  if (!known.size) grid.append(empty());
  return stop;
}
