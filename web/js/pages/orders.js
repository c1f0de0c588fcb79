// My orders (customer), one order with checkout (customer) or fulfilment (vendor), live: its
// delivery fee and receipt (net, VAT, gross), once paid its invoice, and once delivered the
// florist's photo of the delivery and the customer's review.
import { api } from "../api.js";
import { place } from "../place.js";
import { live } from "../live.js";
import { loadConfig, session } from "../session.js";
import { attempt, clearErrors, drawRows, field, h, money, notify, refresh, serially, show, showErrors, statusBadge, when } from "../ui.js";
import { EDIT_WINDOW_MS, STAR_CHOICES, editable, reviewBody } from "../reviews.js";

/** The channel that carries the caller's orders. */
export function ordersChannel() {
  return session.role() === "vendor" ? `vendor:${session.vendorId()}` : "orders";
}

// The shop's answer (`ReviewAnswered`) and `ReviewHidden` reach the review's author on this channel.
const ORDER_EVENTS = new Set(["OrderReserved", "OrderPaid", "OrderCancelled", "ReservationExpired", "OrderAccepted",
  "OrderOutForDelivery", "OrderFulfilled", "OrderRejected", "OrderDeliveryChanged", "ReviewAnswered", "ReviewHidden"]);

/** An event that moves an order: one of the above, or a proof-of-delivery photo attached (its
 *  events name the delivery photo). */
function movesAnOrder(name) {
  return ORDER_EVENTS.has(name) || name.includes("DeliveryPhoto");
}

/** How long after its delivery an order may be reviewed (the API's 30 days). */
const REVIEW_WINDOW_MS = 30 * 24 * 3600 * 1000;

const SLOTS = [["", "Any time of day"], ["morning", "Morning"], ["afternoon", "Afternoon"], ["evening", "Evening"]];

/** The shop's delivery settings in one sentence, shown before the customer types. */
export function describeSettings(s) {
  const where = s.countries.length ? s.countries.join(", ") : "any country";
  const area = s.postcodePrefixes.length ? ` (postcodes starting ${s.postcodePrefixes.join(", ")})` : "";
  const days = s.days.length === 7 ? "every day" : s.days.map((d) => d.slice(0, 3)).join(", ");
  return `Delivers to ${where}${area}, ${days}, up to ${s.horizonDays} days ahead; same-day orders until ${s.sameDayCutoff} (${s.timeZone}).`;
}

/** Where, when and to whom: the lines a florist and a customer read. */
export function deliveryLines(d) {
  if (!d) return [];
  const slot = d.slot ? ` (${d.slot})` : "";
  return [
    h("dt", {}, "Deliver on"), h("dd", { "data-field": "date" }, `${d.date}${slot}`),
    h("dt", {}, "To"), h("dd", { "data-field": "recipient" }, `${d.recipientName}, ${d.recipientPhone}`),
    h("dt", {}, "Address"), h("dd", { "data-field": "address" }, `${d.address.street}, ${d.address.postcode} ${d.address.city}, ${d.address.country}`),
    ...(d.cardMessage ? [h("dt", {}, "Card"), h("dd", { "data-field": "card" }, `“${d.cardMessage}”`)] : []),
  ];
}

/** A rate in basis points as a person reads it: 550 → "5.5 %". */
function rate(basisPoints) {
  return `${(basisPoints / 100).toLocaleString(undefined, { maximumFractionDigits: 2 })} %`;
}

/** What the shop's delivery costs, from its settings (the checkout prices the address itself). */
export function describeFees(fees, currency) {
  if (!fees) return null;
  const cost = (amount) => money({ amount, currency });
  const zones = fees.zones ?? [];
  const free = (a) => !a || Number(a) === 0;
  if (free(fees.standard) && free(fees.sameDaySurcharge) && zones.every((z) => free(z.fee))) return "Delivery is free.";
  return [
    `Delivery costs ${free(fees.standard) ? "nothing" : cost(fees.standard)}`,
    ...zones.map((z) => `${cost(z.fee)} to postcodes starting ${z.postcodePrefix}`),
  ].join("; ") + (free(fees.sameDaySurcharge) ? "." : `; same-day delivery adds ${cost(fees.sameDaySurcharge)}.`);
}

/** The delivery fee the server priced for the order's address, and its receipt: net, VAT and
 *  gross per bouquet, for delivery and in total. Nothing before the delivery details are given. */
export function receiptOf(order) {
  const pricing = order.pricing, receipt = order.receipt;
  if (!pricing || !receipt) return null;
  const surcharge = Number(pricing.sameDaySurcharge.amount) > 0 ? pricing.sameDaySurcharge : null;
  const amounts = (a) => ["net", "vat", "gross"].map((name) =>
    h("td", { "data-field": name, "data-amount": a[name].amount, class: "amount" }, money(a[name])));
  const row = (line, key) => h("tr", { "data-line": key },
    h("th", { scope: "row" }, line.description), h("td", { "data-field": "rate" }, rate(line.vatBasisPoints)), ...amounts(line));
  return h("div", { id: "pricing" },
    h("p", {
      id: "delivery-fee", "data-amount": pricing.deliveryFee.amount, "data-surcharge": pricing.sameDaySurcharge.amount,
      "data-zone": pricing.zone ?? "",
    },
    Number(pricing.deliveryFee.amount) === 0
      ? "Delivery is free"
      : ["Delivery ", h("strong", {}, money(pricing.deliveryFee)), pricing.zone ? ` (postcodes starting ${pricing.zone})` : ""],
    surcharge ? [", including ", h("span", { id: "same-day-surcharge" }, money(surcharge)), " for delivery today"] : "",
    "."),
    h("div", { class: "table-wrap" }, h("table", { id: "receipt" },
      h("caption", {}, "Receipt", pricing.vat.number ? ` (VAT number ${pricing.vat.number})` : ""),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Item"), h("th", { scope: "col" }, "VAT rate"),
        ...["Net", "VAT", "Gross"].map((t) => h("th", { scope: "col", class: "amount" }, t)))),
      h("tbody", {}, receipt.lines.map((line, i) => row(line, String(i + 1))), row(receipt.delivery, "delivery")),
      h("tfoot", {}, h("tr", { id: "receipt-total" }, h("th", { scope: "row" }, "Total"), h("td", {}),
        ...amounts(receipt.total).map((cell) => { cell.id = `receipt-total-${cell.dataset.field}`; return cell; }))))),
    h("p", { class: "muted" }, "Prices include VAT."));
}

const STEPS = [["reserved", "Reserved"], ["paid", "Paid"], ["accepted", "Accepted"], ["out_for_delivery", "Out for delivery"], ["fulfilled", "Delivered"]];

/** The order's way so far: every step up to its state, the current one marked. */
function timeline(status) {
  const reached = STEPS.findIndex(([s]) => s === (status === "payment_pending" ? "reserved" : status));
  if (reached < 0) return null;
  return h("ol", { class: "timeline", id: "timeline", "aria-label": "Progress" },
    STEPS.map(([s, label], i) => h("li", {
      class: i < reached ? "done" : i === reached ? "current" : "todo",
      "aria-current": i === reached ? "step" : undefined, "data-step": s,
    }, label)));
}

/** Calls `changed(orderId)` when one of the caller's orders moves. */
export function followOrders(changed) {
  return live.subscribe(ordersChannel(), (event) => {
    if (movesAnOrder(event.name)) changed(event.data.orderId ?? event.aggregateId);
  });
}

function orderRow(order) {
  return h("tr", { "data-order": order.orderId, "data-status": order.status },
    h("td", {}, h("a", { href: `#/orders/${order.orderId}` }, order.lines.map((l) => l.name).join(", "))),
    h("td", {}, money(order.total)),
    h("td", {}, statusBadge(order.status)),
    h("td", {}, when(order.createdAt)));
}

export async function ordersPage() {
  if (!session.role()) {
    show(h("h1", {}, "My orders"), h("p", {}, h("a", { href: "#/signin" }, "Sign in"), " to see your orders."));
    return;
  }
  const body = h("tbody", {});
  const load = serially(async () => {
    const page = await api("GET", "/orders?limit=50");
    drawRows(body, page.items, (order) => order.orderId, orderRow);
  });
  show(h("h1", {}, "My orders"), h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, h("th", {}, "Bouquets"), h("th", {}, "Total"), h("th", {}, "Status"), h("th", {}, "Ordered"))), body)));
  await load();
  live.onReconnect.add(() => refresh(load));
  return followOrders(() => refresh(load));
}

const TEST_CARDS = [
  ["tok_visa", "Test card: approved"],
  ["tok_decline", "Test card: declined"],
  ["tok_unavailable", "Test card: the gateway is down"],
  ["tok_3ds", "Test card: needs 3-D Secure"],
];

/** Locally, the simulated bank's 3-D Secure prompt: the dev stack settles the attempt. */
function simulatedBank(order) {
  const answer = (approved) => attempt(async () => {
    const response = await fetch("/local/authenticate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ orderId: order.orderId, attemptKey: `${order.orderId}-${order.paymentAttempt}`, approved }),
    });
    if (!response.ok) throw new Error("The simulated bank could not be reached (it exists only in the local dev stack).");
  });
  return h("div", { class: "card", id: "bank", role: "group", "aria-label": "Your bank" },
    h("p", {}, h("strong", {}, "Your bank asks you to confirm this payment."), " (simulated)"),
    h("div", { class: "row" },
      h("button", { type: "button", onclick: () => answer(true) }, "Confirm"),
      h("button", { type: "button", class: "secondary", onclick: () => answer(false) }, "Refuse")));
}

// Stripe.js, loaded from Stripe only in `stripe` mode (card data must go to Stripe's own
// script; it cannot be vendored), once per page life.
let stripePromise = null;
let cardElement = null;

function stripeClient() {
  stripePromise ??= loadConfig().then((config) => new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = "https://js.stripe.com/v3/";
    script.onload = () => resolve(window.Stripe(config.stripePublishableKey));
    script.onerror = () => reject(new Error("Stripe could not be reached; try again in a moment."));
    document.head.append(script);
  }));
  return stripePromise;
}

async function mountCard(slot) {
  const stripe = await stripeClient();
  cardElement = stripe.elements().create("card");
  cardElement.mount(slot);
}

/** A PaymentMethod id (`pm_...`) for the card typed into Stripe's element. */
async function stripeToken() {
  const { paymentMethod, error } = await (await stripeClient()).createPaymentMethod({ type: "card", card: cardElement });
  if (error) throw new Error(error.message);
  return paymentMethod.id;
}

/** The newer of two reads of one review (a read may predate the review just written). */
function newer(a, b) {
  return (a?.version ?? 0) >= (b?.version ?? 0) ? a ?? b : b;
}

/** The florist's photo of the delivery (its URL is signed and expires: the page reads a new one
 *  before then). */
function deliveryPhotoFigure(photo, customer) {
  return h("figure", { id: "delivery-photo", class: "delivery-photo" },
    h("img", { src: photo.url, width: photo.width, height: photo.height, alt: "Photo of the delivery", decoding: "async" }),
    h("figcaption", { class: "muted" }, customer
      ? "The florist took this photo at the delivery; only you and the shop can see it."
      : "The photo taken at the delivery; only the customer and the shop can see it."));
}

export async function orderPage(id) {
  const config = await loadConfig();
  let order;
  try {
    order = await api("GET", `/orders/${id}`);
  } catch (error) {
    // Another's order is not found, like one that does not exist.
    if (error.status !== 404 && error.status !== 400) throw error;
    show(h("p", {}, h("a", { href: session.role() === "vendor" ? "#/vendor" : "#/orders" }, "← Orders")),
      h("h1", {}, "Order not found"),
      h("p", { id: "order-not-found" }, "There is no such order among yours."));
    return;
  }
  const section = h("section", { "data-order": id });
  let timer;
  const countdown = h("p", { class: "countdown", "aria-live": "off", id: "countdown" });
  const tick = () => {
    const left = Math.max(0, new Date(order.reservedUntil).getTime() - Date.now());
    const minutes = Math.floor(left / 60000), seconds = Math.floor((left % 60000) / 1000);
    countdown.textContent = `${minutes}:${String(seconds).padStart(2, "0")} left to pay`;
    if (left === 0) {
      clearInterval(timer);
      countdown.textContent = "Your hold has run out: the bouquets are back on sale.";
    }
  };
  // The shop's delivery settings: shown before the customer types, and the date's bounds.
  const settings = await api("GET", `/vendors/${order.vendorId}/delivery-settings`).catch(() => null);
  // What the customer typed outlives a re-render (a live update must not wipe it).
  let draft = null;
  // Paying again with the same attempt (e.g. after "gateway down") reuses its key: charged once.
  let payKey = null;
  // The chosen test card outlives a re-render (a live update must not reset the customer's choice).
  let testCard = TEST_CARDS[0][0];
  // The paid order's invoice, read with the caller's token and shown in a sandboxed frame (no
  // script runs in it), with a link to open it in its own tab; kept across re-renders.
  const invoiceNumber = h("span", {});
  const invoiceView = h("div", { id: "invoice-view" });
  let invoiceUrl = null;
  // The review form's choices and the edit under way outlive a re-render too.
  let reviewDraft = null;
  let editingReview = false;
  // The delivery photo, kept across re-renders (a new read signs a new URL for the same photo);
  // a little before its URL expires, a fresh one is read.
  let photoShown = null;
  let photoTimer;
  const deliveryPhoto = (customer) => {
    const photo = order.deliveryPhoto;
    if (!photo?.url) return null;
    const key = photo.url.split("?")[0];
    if (photoShown?.key !== key) photoShown = { key, element: deliveryPhotoFigure(photo, customer) };
    clearTimeout(photoTimer);
    const expires = Date.parse(photo.expiresAt ?? "");
    if (Number.isFinite(expires)) {
      const wait = Math.min(Math.max(expires - Date.now() - 30_000, 5_000), 2 ** 31 - 1);
      photoTimer = setTimeout(() => refresh(async () => {
        const latest = await api("GET", `/orders/${id}`);
        if (!latest.deliveryPhoto?.url) return;
        order = { ...order, deliveryPhoto: latest.deliveryPhoto };
        photoShown.element.querySelector("img").src = latest.deliveryPhoto.url;
        deliveryPhoto(customer);
      }), wait);
    }
    return photoShown.element;
  };
  // The customer's review of the delivered order: the form until it is written, then the
  // review (an edit for 48 hours; a hidden review says why).
  const reviewForm = (existing) => {
    const form = h("form", {
      id: "review-form", novalidate: true, "aria-labelledby": "review-title",
      oninput: () => { reviewDraft = Object.fromEntries(new FormData(form)); },
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          clearErrors(form);
          const typed = Object.fromEntries(new FormData(form));
          // Left empty, the stars are refused beside their field; the text is optional (an
          // edit sends it even empty: that removes it).
          const body = {
            ...(typed.stars ? { stars: Number(typed.stars) } : {}),
            ...(existing || typed.text.trim() ? { text: typed.text } : {}),
          };
          let review;
          try {
            review = await api(existing ? "PATCH" : "POST", `/orders/${id}/review`, { body });
          } catch (error) {
            showErrors(form, error);
            return;
          }
          order = { ...order, review: newer(review, order.review) };
          reviewDraft = null;
          editingReview = false;
          render();
          notify(existing ? "Your review is changed." : "Thank you: your review is on the shop's page.", "ok");
        });
      },
    },
    field("Stars", { tag: "select", name: "stars", id: "review-stars", options: STAR_CHOICES, required: true }),
    field("Your review", { tag: "textarea", name: "text", id: "review-text", rows: 3, maxlength: 1000 }, "optional, up to 1,000 characters, shown on the shop's page"),
    h("p", { class: "row" },
      h("button", { type: "submit", id: "post-review" }, existing ? "Save the review" : "Post the review"),
      existing ? h("button", {
        type: "button", class: "secondary",
        onclick: () => { editingReview = false; reviewDraft = null; render(); },
      }, "Keep it as it is") : null));
    form.elements.stars.value = reviewDraft?.stars ?? String(existing?.stars ?? "");
    form.elements.text.value = reviewDraft?.text ?? existing?.text ?? "";
    return form;
  };
  const reviewSection = (customer) => {
    const review = order.review;
    if (order.status !== "fulfilled" || (!review && !customer)) return null;
    const title = h("h2", { id: "review-title" }, customer ? "Your review" : "The customer's review");
    const section = (...children) => h("section", { id: "review", "data-version": review?.version ?? "" }, title, ...children);
    if (!review) {
      const delivered = Date.parse(order.fulfilledAt ?? "");
      if (Number.isFinite(delivered) && Date.now() > delivered + REVIEW_WINDOW_MS) {
        return section(h("p", { class: "muted" }, "Reviews are taken for 30 days after the delivery; this order's time has passed."));
      }
      return section(h("p", { class: "muted" }, "How was it? Only customers whose order was delivered may review the shop."), reviewForm(null));
    }
    if (customer && editingReview && editable(review)) return section(reviewForm(review));
    const until = new Date(Date.parse(review.writtenAt) + EDIT_WINDOW_MS);
    return section(
      review.hidden ? h("p", { class: "hidden-review", id: "review-hidden" },
        `An administrator hid this review: “${review.hidden.reason}”. It is not on the shop's page and does not count in its rating.`) : null,
      h("div", { class: "card review", "data-review": review.orderId }, ...reviewBody(review)),
      customer && editable(review) ? h("p", { class: "row" },
        h("button", { type: "button", class: "secondary", id: "edit-review", onclick: () => { editingReview = true; render(); } }, "Edit"),
        h("span", { class: "muted" }, `You may change it until ${when(until)}.`)) : null,
      h("p", {}, h("a", { href: `#/shops/${order.vendorId}` }, customer ? "The shop's page and its reviews" : "Answer it on the shop's page")));
  };
  const invoice = h("div", { id: "invoice", class: "invoice" },
    h("p", { class: "row" }, h("strong", {}, "Invoice № ", invoiceNumber),
      h("button", {
        type: "button", class: "secondary", id: "open-invoice",
        onclick: () => attempt(async () => {
          const page = await api("GET", `/orders/${id}/invoice`, { headers: { accept: "text/html" }, text: true });
          if (invoiceUrl) URL.revokeObjectURL(invoiceUrl);
          invoiceUrl = URL.createObjectURL(new Blob([page], { type: "text/html" }));
          invoiceView.replaceChildren(
            h("iframe", { id: "invoice-frame", title: `Invoice № ${order.invoiceNumber}`, sandbox: "", srcdoc: page, class: "invoice-frame" }),
            h("p", {}, h("a", { href: invoiceUrl, target: "_blank", rel: "noopener" }, "Open the invoice in a new tab (to print or save it)")));
        }),
      }, "Invoice")),
    invoiceView);
  const render = () => {
    clearInterval(timer);
    invoiceNumber.textContent = order.invoiceNumber ?? "";
    invoice.dataset.invoice = order.invoiceNumber ?? "";
    const customer = session.role() === "customer";
    const vendor = session.role() === "vendor";
    const actions = [];
    if (customer && order.status === "reserved") {
      timer = setInterval(tick, 1000);
      tick();
      const stripeMode = config.paymentProvider === "stripe";
      const cardSlot = h("div", { id: "card-element", class: "card", style: "max-width:420px" });
      const given = order.delivery;
      // Where and when the customer chose on the storefront, until the order has its own.
      const chosen = place.get();
      const value = (name, fallback = "") => draft?.[name] ?? fallback;
      const details = h("fieldset", { id: "delivery" },
        h("legend", {}, "Delivery"),
        settings ? h("p", { class: "muted", id: "delivery-settings" }, describeSettings(settings)) : null,
        settings?.fees ? h("p", { class: "muted", id: "delivery-fees" }, describeFees(settings.fees, order.total.currency)) : null,
        field("Recipient's name", { name: "recipientName", required: true, maxlength: 100, autocomplete: "name", value: value("recipientName", given?.recipientName) }),
        field("Recipient's phone", { name: "recipientPhone", required: true, type: "tel", autocomplete: "tel", value: value("recipientPhone", given?.recipientPhone) }, "international, e.g. +33 6 12 34 56 78"),
        field("Street", { name: "street", required: true, maxlength: 200, autocomplete: "street-address", value: value("street", given?.address.street) }),
        h("div", { class: "row" },
          field("Postcode", { name: "postcode", required: true, maxlength: 10, autocomplete: "postal-code", value: value("postcode", given?.address.postcode ?? chosen?.postcode) }),
          field("City", { name: "city", required: true, maxlength: 100, value: value("city", given?.address.city) }),
          field("Country", { name: "country", required: true, maxlength: 2, size: 3, autocomplete: "country", value: value("country", given?.address.country ?? chosen?.country ?? settings?.countries[0] ?? "") }, "2 letters")),
        h("div", { class: "row" },
          field("Delivery date", { name: "date", type: "date", required: true, min: settings?.firstDate ?? undefined, value: value("date", given?.date ?? chosen?.date ?? settings?.firstDate ?? "") }),
          field("Time of day", { tag: "select", name: "slot", options: SLOTS })),
        field("Note for the recipient", { tag: "textarea", name: "cardMessage", maxlength: 200, rows: 2 }, "optional, up to 200 characters"),
        // Mail goes only to the address the sign-in verified: it is shown, not typed.
        session.email()
          ? field("Your email", { name: "contactEmail", type: "email", readonly: true, value: session.email() }, "the receipt and each step of the delivery go to the address you signed in with")
          : h("p", { class: "muted" }, "Sign in with an email address to get the receipt and each step of the delivery by email."));
      const form = h("form", {
        novalidate: true,
        oninput: () => { draft = Object.fromEntries(new FormData(form)); },
        onsubmit: (e) => {
          e.preventDefault();
          payKey ??= crypto.randomUUID();
          attempt(async () => {
            const typed = Object.fromEntries(new FormData(form));
            const request = {
              recipient: { name: typed.recipientName, phone: typed.recipientPhone },
              address: { street: typed.street, postcode: typed.postcode, city: typed.city, country: typed.country },
              date: typed.date,
              ...(typed.slot ? { slot: typed.slot } : {}),
              ...(typed.cardMessage ? { cardMessage: typed.cardMessage } : {}),
              ...(typed.contactEmail ? { contactEmail: typed.contactEmail } : {}),
            };
            // The details first (at the version shown), then the payment. A refused detail is
            // shown beside its field, the form as the customer left it.
            const shown = order.total;
            try {
              order = await api("PUT", `/orders/${id}/delivery`, { body: request, headers: { "if-match": `"${order.version}"` } });
              draft = null;
            } catch (error) {
              if (error.status === 400) {
                showErrors(form, error);
                return;
              }
              throw error;
            }
            // The address priced the delivery: a total other than the one on the button is
            // shown, with its receipt, before anything is charged.
            if (order.total.currency !== shown.currency || Number(order.total.amount) !== Number(shown.amount)) {
              render();
              notify(`Delivery to this address costs ${money(order.pricing?.deliveryFee)}: the total is ${money(order.total)}. Check the receipt, then pay.`, "ok");
              document.getElementById("pricing")?.scrollIntoView({ block: "center" });
              return;
            }
            try {
              const token = stripeMode
                ? await stripeToken()
                : new FormData(form).get("paymentToken");
              const answer = await api("POST", `/orders/${id}/payment`, { body: { paymentToken: token }, key: payKey });
              if (answer.nextAction?.type === "authenticate") {
                // 3-D Secure: in Stripe's own dialog, or (simulated) the local bank below; the
                // webhook then moves the order, which reaches this page over the live channel.
                order = answer;
                notify("Confirm the payment with your bank.", "ok");
                if (stripeMode) {
                  const { error } = await (await stripeClient()).handleNextAction({ clientSecret: answer.nextAction.clientSecret });
                  if (error) throw new Error(error.message);
                }
                return;
              }
              order = answer;
              payKey = null;
              notify("Paid. The vendor has been told.", "ok");
            } catch (error) {
              if (error.code !== "payment.unavailable") payKey = null;
              order = await api("GET", `/orders/${id}`);
              throw error;
            } finally {
              render();
            }
          });
        },
      },
      stripeMode
        ? h("div", {}, h("label", { for: "card-element" }, "Card"), cardSlot,
            h("p", { class: "muted" }, "Card details go to Stripe directly; this shop never sees them."))
        : field("Card", {
          tag: "select", name: "paymentToken", options: TEST_CARDS,
          onchange: (e) => { testCard = e.target.value; },
        }, "simulated gateway: no real money moves"),
      h("div", { class: "row", style: "margin-top:12px" },
        h("button", { type: "submit", id: "pay" }, `Pay ${money(order.total)}`),
        h("button", {
          type: "button", class: "secondary",
          onclick: () => attempt(async () => { order = await api("POST", `/orders/${id}/cancel`); render(); }),
        }, "Cancel the order")));
      // What delivery costs, once the address is given: before the card and the button.
      form.prepend(details, receiptOf(order) ?? h("p", { class: "muted", id: "delivery-fee-pending" },
        "The delivery fee depends on the address: it is shown, with the receipt, before anything is charged."));
      form.elements.slot.value = value("slot", given?.slot ?? "");
      form.elements.cardMessage.value = value("cardMessage", given?.cardMessage ?? "");
      if (stripeMode) attempt(() => mountCard(cardSlot));
      else form.elements.paymentToken.value = testCard;
      actions.push(countdown, form);
    }
    if (customer && order.status === "payment_pending" && order.authenticatingUntil && config.paymentProvider !== "stripe") {
      actions.push(simulatedBank(order));
    }
    if (vendor && order.status === "paid") {
      actions.push(h("button", {
        type: "button", id: "fulfil",
        onclick: () => attempt(async () => { order = await api("POST", `/orders/${id}/fulfil`); render(); }),
      }, "Mark as fulfilled"));
    }
    const words = {
      reserved: "Reserved for you.", payment_pending: "Your payment is being confirmed.",
      paid: "Paid. Waiting for the florist to accept it.", accepted: "The florist accepted it and is preparing it.",
      out_for_delivery: "On its way.", fulfilled: "Delivered. Enjoy the flowers.",
      rejected: `The florist could not take it${order.rejectionReason ? `: "${order.rejectionReason}"` : ""}. ${order.refundedAt ? "You have been refunded." : "A refund follows."}`,
      cancelled: "Cancelled. The bouquets went back on sale.", expired: "The hold ran out before payment; the bouquets went back on sale.",
    };
    const showDetails = order.delivery && !(customer && order.status === "reserved");
    const fee = order.pricing?.deliveryFee;
    // (What is not there is left out: `replaceChildren` would write a null as "null".)
    section.replaceChildren(...[
      h("h1", {}, "Order"),
      h("p", { class: "row" }, h("span", { id: "order-status" }, statusBadge(order.status)), words[order.status] ?? ""),
      timeline(order.status),
      h("ul", {}, order.lines.map((l) => h("li", {}, `${l.name}: ${money(l.price)}`))),
      h("p", {}, h("strong", { id: "order-total", "data-amount": order.total.amount }, `Total ${money(order.total)}`),
        fee ? ` (delivery ${Number(fee.amount) === 0 ? "free" : `${money(fee)} included`})` : ""),
      order.invoiceNumber ? invoice : null,
      showDetails ? h("dl", { class: "delivery", id: "delivery-details" }, deliveryLines(order.delivery)) : null,
      showDetails ? receiptOf(order) : null,
      deliveryPhoto(customer),
      reviewSection(customer),
      ...actions].filter(Boolean));
  };
  render();
  show(h("p", {}, h("a", { href: session.role() === "vendor" ? "#/vendor" : "#/orders" }, "← Orders")), section);
  const reread = async () => {
    const latest = await api("GET", `/orders/${id}`);
    // Only a newer order, review or a photo re-renders: the event of a change this page already
    // shows changes nothing. A review written here stays while a read from before it arrives.
    const moved = latest.version > order.version
      || (latest.review?.version ?? 0) > (order.review?.version ?? 0)
      || Boolean(latest.deliveryPhoto?.url) !== Boolean(order.deliveryPhoto?.url);
    if (moved) {
      order = { ...latest, review: newer(latest.review, order.review) };
      render();
    }
  };
  live.onReconnect.add(() => refresh(reread));
  const stop = followOrders((orderId) => orderId === id && refresh(reread));
  return () => { clearInterval(timer); clearTimeout(photoTimer); stop(); };
}
