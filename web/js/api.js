// The HTTP API client: bearer token, Idempotency-Key on every POST, problem+json in words.
import { session } from "./session.js";
import { human } from "./ui.js";

/** A problem+json answer (RFC 9457) as an Error whose message a person can read. */
export class Problem extends Error {
  constructor(status, body) {
    super(describe(status, body));
    this.status = status;
    this.code = body?.code;
    this.body = body;
  }
}

// Words for the codes a shopper or vendor meets; where the server's detail adds something (why
// the delivery date lapsed, which state the order is in), it follows.
const ADVICE = {
  "bouquet.unavailable": "Someone else has just reserved or bought this bouquet.",
  "cart.vendor_mismatch": "Your cart holds bouquets from another vendor; one order comes from one vendor.",
  "cart.full": "Your cart is full.",
  "reservation.expired": "Your 15-minute hold ran out, so the bouquets went back on sale.",
  "reservation.limit": "You already hold bouquets in several orders: pay, cancel or let one expire first.",
  "payment.declined": "Your card was declined; nothing was charged. Try another card.",
  "payment.unavailable": "The payment service did not answer; you were not charged twice. Try again in a moment.",
  "precondition.failed": "It changed after you opened it; reload to see the change.",
  "order.delivery_required": "Give the delivery details before paying.",
  "order.delivery_fee_changed": "This address costs a different delivery fee than the one paid; keep the same zone or cancel.",
  "auth.unauthenticated": "Please sign in again.",
  "auth.forbidden": "Your account may not do this.",
  "service.busy": "The shop is busy; try again in a moment.",
  "vendor.payouts_not_ready": "This shop cannot take payments yet, so its bouquets cannot be reserved; try again later.",
  "idempotency.in_progress": "Your request is still being handled; try again in a moment.",
  "review.exists": "This order has its review already.",
  "review.not_delivered": "Only a delivered order can be reviewed.",
  "review.window_closed": "Reviews are taken for 30 days after the delivery; this order's time has passed.",
  "review.edit_window_closed": "A review can be changed for 48 hours after it is written; this one no longer can.",
  "review.already_answered": "The shop has answered this review already.",
  "alert.already_acknowledged": "Someone of your shop has acknowledged this alert already.",
  "review.not_allowed": "Only the order's customer reviews it, its shop answers it, and an administrator hides it.",
};
const WITH_DETAIL = new Set(["order.delivery_required", "order.invalid_state"]);

function describe(status, body) {
  if (body && typeof body === "object" && body.code) {
    const advice = ADVICE[body.code];
    if (advice) return WITH_DETAIL.has(body.code) && body.detail ? `${advice} (${body.detail})` : advice;
    if (body.errors?.length) {
      return `Please correct: ${body.errors.map((e) => `${human(e.field)} ${e.message}`).join("; ")}.`;
    }
    return body.detail ? body.detail[0].toUpperCase() + body.detail.slice(1) + "." : body.title;
  }
  if (status === 401) return "Please sign in (your session is missing or has expired).";
  return `The request failed (HTTP ${status}).`;
}

function idempotencyKey() {
  return crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(16).slice(2)}`;
}

// Answers that ask for the same request again after `Retry-After`: the key is busy in another
// request, or the service is. Sent again with the same Idempotency-Key, so it takes effect once.
const ASKS_AGAIN = new Set(["idempotency.in_progress", "service.busy"]);
const TRIES = 3;
const MAX_WAIT_MS = 3000;

function asksAgain(response, body) {
  return response.status === 429 || ASKS_AGAIN.has(body?.code);
}

function retryAfterMs(response) {
  const seconds = Number(response.headers.get("retry-after"));
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds * 1000, MAX_WAIT_MS) : 1000;
}

/**
 * `api("POST", "/orders", {body, headers})`: the parsed JSON body, `null` for 204, or throws a
 * `Problem`. `raw: true` also returns the response's headers; `text: true` returns the body as
 * text (a document: `Accept: text/csv`, an HTML invoice), problems still parsed.
 */
export async function api(method, path, { body, headers = {}, raw = false, key, text: asText = false } = {}) {
  // Revalidate every time: a live update has just said the data changed.
  const request = { method, headers: { ...headers }, cache: "no-cache" };
  const token = session.token();
  if (token) request.headers.authorization = `Bearer ${token}`;
  if (body !== undefined) {
    request.headers["content-type"] = "application/json";
    request.body = JSON.stringify(body);
  }
  if (method === "POST") request.headers["idempotency-key"] = key ?? idempotencyKey();
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(`/v1${path}`, request);
    const text = await response.text();
    let parsed = null;
    try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
    if (!response.ok && attempt < TRIES && asksAgain(response, parsed)) {
      await new Promise((resolve) => setTimeout(resolve, retryAfterMs(response)));
      continue;
    }
    if (!response.ok) throw new Problem(response.status, parsed);
    if (asText) return text;
    return raw ? { body: parsed, headers: response.headers } : parsed;
  }
}
