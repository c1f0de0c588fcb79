// Small DOM helpers shared by the pages: no framework, no dependencies.

/** `h("a", {href: "#/"}, "text", child)`: an element; `on*` attributes become listeners. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

/** Replaces the page's content and moves focus to it (screen readers announce the page). */
export function show(...children) {
  const main = document.getElementById("main");
  main.replaceChildren(...children);
  main.focus({ preventScroll: true });
}

export function money(value) {
  if (!value) return "–";
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency: value.currency }).format(Number(value.amount));
  } catch {
    return `${value.amount} ${value.currency}`;
  }
}

/** Basis points as a percentage written for people: 1000 → "10", 1250 → "12.5". */
export function percentOf(basisPoints) {
  return (Number(basisPoints ?? 0) / 100).toLocaleString(undefined, { maximumFractionDigits: 2 });
}

/** A markdown step as a shopper reads it: "−10 %, freshness below 80". */
export function markdownStep(step) {
  return `−${percentOf(step.offBasisPoints)} %, freshness below ${step.below}`;
}

/** A bouquet's price: "€24.50"; while its freshness has marked it down, "was €49.00 / now
 *  €44.10" and the step that applies. `data-price` (and `data-list-price`) carry the amounts. */
export function priceTag(bouquet) {
  const price = bouquet.price;
  if (!bouquet.listPrice || !bouquet.markdown) {
    return h("span", { class: "price", "data-price": price?.amount }, h("strong", {}, money(price)));
  }
  return h("span", { class: "price marked-down", "data-price": price.amount, "data-list-price": bouquet.listPrice.amount },
    h("span", { class: "was" }, "was ", h("s", {}, money(bouquet.listPrice))), " / now ", h("strong", {}, money(price)),
    h("span", { class: "step", "data-markdown": bouquet.markdown.offBasisPoints }, markdownStep(bouquet.markdown)));
}

export function when(timestamp) {
  return timestamp ? new Date(timestamp).toLocaleString() : "–";
}

/** `inVase`: the bouquet stands in a smart vase (its score comes with the vase's first reading). */
export function freshnessBadge(freshness, inVase = true) {
  if (freshness === null || freshness === undefined) {
    return h("span", { class: "badge muted", "data-freshness": "" }, inVase ? "awaiting a reading" : "no vase");
  }
  const level = freshness >= 70 ? "good" : freshness >= 40 ? "mid" : "bad";
  return h("span", { class: `badge fresh-${level}`, "data-freshness": freshness, title: "Freshness score, 0 to 100" },
    `freshness ${freshness}`);
}

/** A shop's rating as a card shows it, "★ 4.3 (19 reviews)" (read out "Rated 4.3 out of 5 from
 *  19 reviews"), or "No reviews yet"; nothing when the rating is not known. */
export function ratingBadge(rating) {
  if (!rating) return null;
  const count = rating.count ?? 0;
  if (!count || rating.average === null || rating.average === undefined) {
    return h("span", { class: "rating muted", "data-rating": "", "data-count": "0" }, "No reviews yet");
  }
  const average = stars(rating.average);
  const reviews = `${count} review${count === 1 ? "" : "s"}`;
  return h("span", {
    class: "rating", role: "img", "aria-label": `Rated ${average} out of 5 from ${reviews}`,
    "data-rating": rating.average, "data-count": count,
  }, h("span", { class: "star" }, "★"), ` ${average} (${reviews})`);
}

/** An average of stars as written beside it, always to a tenth: 4 → "4.0". */
export function stars(average) {
  return Number(average).toLocaleString(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
}

export function statusBadge(status) {
  return h("span", { class: `badge status-${status}`, "data-status": status }, status.replaceAll("_", " "));
}

let noticeTimer;
/** A message at the top of the page; errors stay until the next one, confirmations fade. */
export function notify(text, kind = "error") {
  const notice = document.getElementById("notice");
  notice.textContent = text;
  notice.className = kind === "ok" ? "notice ok" : "notice";
  notice.setAttribute("role", kind === "ok" ? "status" : "alert");
  notice.hidden = false;
  clearTimeout(noticeTimer);
  if (kind === "ok") noticeTimer = setTimeout(() => { notice.hidden = true; }, 6000);
}

export function clearNotice() {
  document.getElementById("notice").hidden = true;
}

/** Runs `action`, a person's, showing a failure in words; returns its result or undefined. */
export async function attempt(action) {
  try {
    clearNotice();
    return await action();
  } catch (error) {
    notify(error.message ?? String(error));
    return undefined;
  }
}

/** Runs `action`, a live refresh: a failure is shown, but what the person was told stays. */
export async function refresh(action) {
  try {
    return await action();
  } catch (error) {
    notify(error.message ?? String(error));
    return undefined;
  }
}

/** `load` for many callers at once (a click's own reload, live events, a reconnect): a call while
 *  one runs waits for it and then runs once more, for all who called meanwhile. Runs never
 *  overlap, so an older read is never drawn over a newer one, and the last drawing comes from
 *  a read made after the last call. */
export function serially(load) {
  let tail = Promise.resolve();
  let next = null;
  return () => {
    if (!next) {
      next = tail.then(() => {
        next = null;
        return load();
      });
      tail = next.catch(() => undefined);
    }
    return next;
  };
}

const drawnFrom = new WeakMap();

/** Draws one row per item in `body`, keyed by `key(item)`; a row whose item has not changed
 *  stays as it is (and where it is), so a live redraw keeps the focus and what is being typed in
 *  it. `build(item)` draws a changed or new row; `empty`, if given, stands for no items. */
export function drawRows(body, items, key, build, empty = null) {
  const rows = new Map([...body.children].filter((row) => drawnFrom.has(row)).map((row) => [drawnFrom.get(row).key, row]));
  const wanted = items.map((item) => {
    const id = key(item);
    const drawn = JSON.stringify(item);
    const row = rows.get(id);
    if (row && drawnFrom.get(row).drawn === drawn) return row;
    const fresh = build(item);
    drawnFrom.set(fresh, { key: id, drawn });
    return fresh;
  });
  if (!wanted.length && empty) wanted.push(empty);
  const keep = new Set(wanted);
  for (const row of [...body.children]) if (!keep.has(row)) row.remove();
  // Moves only what is out of place: a row moved loses the focus.
  wanted.forEach((row, i) => {
    if (body.children[i] !== row) body.insertBefore(row, body.children[i] ?? null);
  });
}

/** A message beside a form (`role=status`, or `alert` for an error), where the eye is, that
 *  live refreshes leave alone: `say(form, "Saved.")`; `say(form, "")` clears it. */
export function say(form, text, kind = "ok") {
  let box = form.querySelector(":scope > .form-message");
  if (!box) {
    box = h("p", { class: "form-message", tabindex: "-1" });
    form.prepend(box);
  }
  box.textContent = text;
  box.className = `form-message ${kind}`;
  box.setAttribute("role", kind === "ok" ? "status" : "alert");
  box.hidden = !text;
  return box;
}

/** The input of `form` a field error names (`price.amount` → `price`,
 *  `delivery.recipient.name` → `recipientName`, `delivery.address.postcode` → `postcode`), or
 *  the input of a list it is in (`fees.zones[0].fee` → `fees.zones`). */
function inputFor(form, field) {
  const parts = field.split(/[./]/).filter(Boolean);
  const last = parts.at(-1) ?? "";
  const pair = parts.length > 1 ? parts.at(-2) + last[0].toUpperCase() + last.slice(1) : "";
  const path = field.replace(/\[\d+\]/g, "").split(".");
  const enclosing = path.map((_, i) => path.slice(0, path.length - i).join("."));
  for (const name of [field, pair, last, parts[0], ...enclosing]) {
    const input = name && form.elements.namedItem(name);
    if (input && input.tagName) return input;
  }
  return null;
}

/** Clears what `showErrors` put on `form`. */
export function clearErrors(form) {
  for (const hint of form.querySelectorAll(".field-error")) hint.remove();
  for (const input of form.querySelectorAll("[aria-invalid]")) {
    input.removeAttribute("aria-invalid");
    input.removeAttribute("aria-describedby");
  }
  say(form, "");
}

/** Shows a refusal on `form`: each field error beside its field (`aria-invalid`,
 *  `aria-describedby`), and a summary at the form's top, focused; both scrolled into view (the
 *  first field's message first, if they do not fit together). */
export function showErrors(form, error) {
  clearErrors(form);
  const unplaced = [];
  for (const { field, message } of error.body?.errors ?? []) {
    const input = inputFor(form, field ?? "");
    if (!input) {
      unplaced.push(`${human(field)} ${message}`);
      continue;
    }
    const id = `${input.id || input.name}-error`;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", id);
    // Several errors on one input (a list's lines) share its one hint.
    const hint = form.querySelector(`[id="${id}"]`);
    if (hint) hint.append(` ${message}.`);
    else input.closest("div")?.append(h("p", { class: "field-error", id }, `${labelOf(input)} ${message}.`));
  }
  const summary = error.body?.errors?.length
    ? ["Please correct the highlighted fields.", ...unplaced].join(" ")
    : error.message ?? String(error);
  const box = say(form, summary, "error");
  box.scrollIntoView({ block: "center" });
  // In a long form the first field's own message may be below the fold: in view too, the
  // summary kept as far as both fit.
  form.querySelector(".field-error")?.scrollIntoView({ block: "nearest" });
  box.focus({ preventScroll: true });
}

function labelOf(input) {
  const label = input.labels?.[0];
  const text = label ? [...label.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join("").trim() : "";
  return text || human(input.name);
}

/** `delivery.address.postcode` → "Postcode"; `price.amount` → "Price". */
export function human(field = "") {
  const parts = field.split(/[./]/).filter((p) => p && !/^\d+$/.test(p) && p !== "delivery" && p !== "amount");
  const last = parts.at(-1) ?? "";
  const words = last.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
  return words ? words[0].toUpperCase() + words.slice(1) : "The request";
}

/** A labelled input: `field("Name", {name: "name", required: true})`. */
export function field(label, attributes, hint) {
  const id = attributes.id ?? `f-${attributes.name}`;
  const control = attributes.tag === "textarea"
    ? h("textarea", { ...attributes, tag: undefined, id })
    : attributes.tag === "select"
      ? h("select", { ...attributes, tag: undefined, options: undefined, id },
          attributes.options.map(([value, text]) => h("option", { value }, text)))
      : h("input", { ...attributes, id });
  return h("div", {}, h("label", { for: id }, label, hint ? h("span", { class: "hint muted" }, ` (${hint})`) : null), control);
}
