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

/** Runs `action`, showing a failure in words; returns its result or undefined. */
export async function attempt(action) {
  try {
    clearNotice();
    return await action();
  } catch (error) {
    notify(error.message ?? String(error));
    return undefined;
  }
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
