// A shop's page (#/shops/{id}): its name, rating and reviews (newest first, paged), where and on
// which days it delivers, and its bouquets on sale. Live from the public catalogue channel,
// filtered to the shop (its own channel is its members'). Its members answer reviews here; an
// administrator hides them.
import { api } from "../api.js";
import { live } from "../live.js";
import { session } from "../session.js";
import { attempt, clearErrors, field, h, notify, refresh, show, showErrors, stars } from "../ui.js";
import { reviewBody } from "../reviews.js";
import { card, follow } from "./catalogue.js";
import { describeFees, describeSettings } from "./orders.js";

const REVIEWS_PER_PAGE = 10;
const BOUQUETS_PER_PAGE = 24;

/** The rating in figures: the average, the count, and how many gave each number of stars. */
function ratingView(rating) {
  const count = rating?.count ?? 0;
  if (!count || rating.average === null || rating.average === undefined) {
    return [h("p", { id: "shop-rating", "data-count": "0" }, "No reviews yet.")];
  }
  const byStars = rating.byStars ?? [0, 0, 0, 0, 0];
  const most = Math.max(...byStars, 1);
  return [
    h("p", { id: "shop-rating", "data-rating": rating.average, "data-count": count },
      h("strong", { class: "big" }, `★ ${stars(rating.average)}`), ` out of 5, from ${count} review${count === 1 ? "" : "s"}`),
    h("ul", { class: "by-stars", "aria-label": "Reviews by stars" },
      [5, 4, 3, 2, 1].map((n) => h("li", { "data-stars": n },
        h("span", {}, `${n} star${n === 1 ? "" : "s"}`),
        // The bar repeats the count for the eye; the count is what is read out.
        h("span", { class: "bar", "aria-hidden": "true" }, h("span", { style: `width:${Math.round((100 * byStars[n - 1]) / most)}%` })),
        h("span", { "data-count": byStars[n - 1] }, String(byStars[n - 1]))))),
  ];
}

/** A form under one review: `send(text)` is the request; `done(review)` gets its answer. A
 *  refusal is said on the form, beside its field. */
function reviewForm({ label, name, id, hint, button, rows }, send, done) {
  const form = h("form", {
    novalidate: true,
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        clearErrors(form);
        let answer;
        try {
          answer = await send(form.elements.namedItem(name).value);
        } catch (error) {
          showErrors(form, error);
          return;
        }
        done(answer);
      });
    },
  },
  rows
    ? field(label, { tag: "textarea", name, id, rows, maxlength: 1000, required: true }, hint)
    : field(label, { name, id, maxlength: 1000, required: true }, hint),
  h("p", {}, h("button", { type: "submit", class: "secondary" }, button)));
  return form;
}

export async function shopPage(vendorId) {
  const member = session.role() === "vendor" && session.vendorId() === vendorId;
  const admin = session.role() === "admin";
  let reviews;
  try {
    reviews = await api("GET", `/vendors/${vendorId}/reviews?limit=${REVIEWS_PER_PAGE}`);
  } catch (error) {
    if (error.status !== 404 && error.status !== 400) throw error;
    show(h("h1", {}, "Shop not found"), h("p", { id: "shop-not-found" }, "There is no such shop. ", h("a", { href: "#/" }, "Back to the catalogue")));
    return;
  }
  const [settings, bouquets] = await Promise.all([
    api("GET", `/vendors/${vendorId}/delivery-settings`).catch(() => null),
    api("GET", `/bouquets?vendorId=${encodeURIComponent(vendorId)}&limit=${BOUQUETS_PER_PAGE}`),
  ]);
  const name = reviews.name ?? bouquets.items[0]?.vendorName ?? "A shop";

  // The rating: a page read taken only if asked after the last live frame (which is newer).
  const rating = h("section", { id: "rating", "aria-labelledby": "rating-title" });
  let heard = { at: 0, version: 0 };
  const showRating = (figures) => rating.replaceChildren(h("h2", { id: "rating-title" }, "Rating"), ...ratingView(figures));
  const pageRating = (figures, asked) => { if (asked >= heard.at) showRating(figures); };
  const liveRating = (figures, version = 0) => {
    if (version && version <= heard.version) return;
    heard = { at: Date.now(), version: version || heard.version };
    showRating(figures);
  };

  // The reviews shown, newest first. A review is never shown older than a version seen (the
  // answer just posted stays while a read begun before it comes back).
  const list = h("div", { id: "reviews", class: "reviews" });
  const none = h("p", { class: "muted", id: "no-reviews" }, "No reviews yet: only customers whose order was delivered may write one.");
  const more = h("button", { type: "button", class: "secondary", id: "more-reviews" }, "More reviews");
  let shown = [];
  let cursor = null;
  const latest = new Map();
  const drawn = new Map(); // reviewId -> {version, element}
  const pick = (review) => {
    const held = latest.get(review.reviewId);
    if (held && held.version > review.version) return held;
    latest.set(review.reviewId, review);
    return review;
  };
  const settle = (review) => {
    const now = pick(review);
    shown = shown.map((r) => (r.reviewId === now.reviewId ? now : r));
    draw();
  };
  const item = (review) => {
    const answerable = member && !review.answer && review.orderId;
    return h("article", { class: "card review", "data-review": review.reviewId, "data-version": review.version, "data-stars": review.stars },
      ...reviewBody(review),
      answerable ? reviewForm(
        { label: "Your answer", name: "text", id: `answer-${review.reviewId}`, hint: "public, once, up to 1,000 characters", button: "Answer", rows: 2 },
        (text) => api("PUT", `/orders/${review.orderId}/review/answer`, { body: { text } }),
        (answered) => { settle(answered); notify("Your answer is published under the review.", "ok"); }) : null,
      admin && review.orderId ? reviewForm(
        { label: "Reason for hiding it", name: "reason", id: `hide-${review.reviewId}`, hint: "its author is told", button: "Hide" },
        (reason) => api("PUT", `/orders/${review.orderId}/review/hidden`, { body: { reason } }),
        () => { forget(review.reviewId); notify("The review is hidden; its author is told why.", "ok"); refresh(reloadReviews); }) : null);
  };
  // Moves only what changed: a member typing an answer under one review keeps the focus while
  // another arrives above it.
  const draw = () => {
    const elements = shown.map((review) => {
      const kept = drawn.get(review.reviewId);
      if (kept?.version === review.version) return kept.element;
      const element = item(review);
      kept?.element.replaceWith(element);
      drawn.set(review.reviewId, { version: review.version, element });
      return element;
    });
    const keep = new Set(elements);
    for (const [reviewId, { element }] of drawn) {
      if (!keep.has(element)) {
        element.remove();
        drawn.delete(reviewId);
      }
    }
    let at = list.firstChild;
    for (const element of elements) {
      if (element === at) at = at.nextSibling;
      else list.insertBefore(element, at);
    }
    none.hidden = shown.length > 0;
    more.hidden = !cursor;
  };
  const forget = (reviewId) => {
    shown = shown.filter((r) => r.reviewId !== reviewId);
    draw();
  };
  // The first page again (a review written, edited, answered or hidden). Reviews read with
  // "More reviews" stay under it: the older ones, still after the first page's cursor.
  const reloadReviews = async () => {
    const asked = Date.now();
    const page = await api("GET", `/vendors/${vendorId}/reviews?limit=${REVIEWS_PER_PAGE}`);
    pageRating(page.rating, asked);
    const first = page.items.map(pick);
    const firstIds = new Set(first.map((r) => r.reviewId));
    const oldest = first.at(-1)?.writtenAt ?? "";
    const older = page.nextCursor ? shown.filter((r) => !firstIds.has(r.reviewId) && r.writtenAt < oldest) : [];
    if (!older.length) cursor = page.nextCursor ?? null;
    shown = [...first, ...older];
    draw();
  };
  more.addEventListener("click", () => attempt(async () => {
    const page = await api("GET", `/vendors/${vendorId}/reviews?limit=${REVIEWS_PER_PAGE}&cursor=${encodeURIComponent(cursor)}`);
    const have = new Set(shown.map((r) => r.reviewId));
    shown.push(...page.items.filter((r) => !have.has(r.reviewId)).map(pick));
    cursor = page.nextCursor ?? null;
    draw();
  }));

  // Its bouquets on sale, as the catalogue shows them (without the shop's name on each).
  const grid = h("div", { class: "grid", id: "shop-bouquets" });
  const noBouquets = h("p", { class: "muted" }, "Nothing on sale right now.");
  const moreBouquets = h("button", { type: "button", class: "secondary", hidden: true }, "Show more");
  const known = new Map();
  let bouquetCursor = null;
  const put = (bouquet) => {
    const existing = grid.querySelector(`[data-bouquet="${bouquet.bouquetId}"]`);
    if (bouquet.gone || bouquet.status === "withdrawn" || bouquet.suspended || (bouquet.vendorId && bouquet.vendorId !== vendorId)) {
      existing?.remove();
      known.delete(bouquet.bouquetId);
    } else if (!existing || existing.dataset.version !== String(bouquet.version)) {
      known.set(bouquet.bouquetId, bouquet);
      if (existing) existing.replaceWith(card(bouquet, { shop: false }));
      else grid.append(card(bouquet, { shop: false }));
    }
    noBouquets.hidden = known.size > 0;
  };
  const showBouquets = (page, { replace = false } = {}) => {
    if (replace) {
      const onSale = new Set(page.items.map((b) => b.bouquetId));
      for (const id of [...known.keys()]) if (!onSale.has(id)) put({ bouquetId: id, gone: true });
    }
    page.items.forEach(put);
    bouquetCursor = page.nextCursor ?? null;
    moreBouquets.hidden = !bouquetCursor;
    noBouquets.hidden = known.size > 0;
  };
  const loadBouquets = async () => showBouquets(
    await api("GET", `/bouquets?vendorId=${encodeURIComponent(vendorId)}&limit=${BOUQUETS_PER_PAGE}`), { replace: true });
  moreBouquets.addEventListener("click", () => attempt(async () => showBouquets(
    await api("GET", `/bouquets?vendorId=${encodeURIComponent(vendorId)}&limit=${BOUQUETS_PER_PAGE}&cursor=${encodeURIComponent(bouquetCursor)}`))));

  const currency = bouquets.items[0]?.price.currency;
  const fees = settings?.fees && currency ? describeFees(settings.fees, currency) : null;
  show(
    h("p", {}, h("a", { href: "#/" }, "← Catalogue")),
    h("section", { "data-shop": vendorId },
      h("h1", {}, name),
      member ? h("p", { class: "muted" }, "Your shop's page, as customers see it; you may answer each review once.") : null,
      rating,
      h("section", { id: "shop-delivery", "aria-labelledby": "delivery-title" },
        h("h2", { id: "delivery-title" }, "Delivery"),
        settings
          ? [h("p", { id: "shop-delivery-area" }, describeSettings(settings)), fees ? h("p", { class: "muted" }, fees) : null]
          : h("p", { class: "muted" }, "This shop has not said where it delivers yet.")),
      h("section", { "aria-labelledby": "reviews-title" },
        h("h2", { id: "reviews-title" }, "Reviews"),
        h("p", { class: "muted" }, "Newest first. Only a customer whose order this shop delivered may review it."),
        none, list, h("p", {}, more)),
      h("section", { "aria-labelledby": "bouquets-title" },
        h("h2", { id: "bouquets-title" }, "On sale"),
        grid, noBouquets, moreBouquets)));

  showRating(reviews.rating);
  shown = reviews.items.map(pick);
  cursor = reviews.nextCursor ?? null;
  draw();
  showBouquets(bouquets);

  // The shop's events on the public channel: its reviews, its rating, its suspension.
  const onShop = (event, _, frame) => {
    if (event === "ShopRatingChanged") liveRating(frame.data.rating, frame.aggregateVersion);
    else if (event.startsWith("Review")) {
      if (event === "ReviewHidden") forget(frame.aggregateId); // a review's own id
      refresh(reloadReviews);
    } else if (event === "VendorSuspended") {
      for (const id of [...known.keys()]) put({ bouquetId: id, gone: true });
    } else if (event === "VendorReinstated") {
      // The catalogue's page may be the edge's copy (5 s): read it after that.
      setTimeout(() => refresh(loadBouquets), 6000);
    }
  };
  live.onReconnect.add(() => refresh(() => Promise.all([reloadReviews(), loadBouquets()])));
  return follow("catalogue", (id, render) => known.has(id) && render(known.get(id)), put, onShop, vendorId);
}
