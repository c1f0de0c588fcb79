// The vendor console, as pages a florist moves between (#/vendor/{page}): Today (orders to
// deliver, live, and the last two weeks' deliveries), Vases (connection state, care alerts to
// acknowledge, readings), Bouquets (listed, edited, photographed, placed in a free vase), Money
// (payouts, analytics, earnings) and Settings (delivery settings with fees and VAT, the vase
// rules: markdowns and care thresholds). Every page's header counts the open alerts nobody
// acknowledged yet, live.
import { api } from "../api.js";
import { chart } from "../chart.js";
import { live } from "../live.js";
import { session } from "../session.js";
import { attempt, clearErrors, drawRows, field, freshnessBadge, h, money, notify, percentOf, priceTag, refresh, say, serially, show, showErrors, statusBadge, when } from "../ui.js";
import { followOrders } from "./orders.js";
import { PHOTO_TYPES, picture, uploadPhoto } from "../photo.js";

function formJson(form) {
  return Object.fromEntries([...new FormData(form)].filter(([, v]) => v !== ""));
}

/** Every item of a list route, page by page (at most `pages` of 100). */
async function allItems(path, pages = 5) {
  const items = [];
  let cursor = null;
  for (let i = 0; i < pages; i++) {
    const joiner = path.includes("?") ? "&" : "?";
    const page = await api("GET", `${path}${joiner}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.nextCursor;
    if (!cursor) break;
  }
  return items;
}

/** The shop's free vases (no bouquet in them) as a select's options, the choice kept across
 *  refreshes while that vase is still free. */
function freeVaseSelect(vendorId) {
  const select = h("select", { name: "vaseId", id: "f-vaseId" });
  const hint = h("p", { class: "muted" });
  const load = serially(async () => {
    const vases = await allItems(`/vendors/${vendorId}/vases`);
    const free = vases.filter((v) => !v.bouquetId);
    const chosen = select.value;
    select.replaceChildren(h("option", { value: "" }, "No vase"),
      ...free.map((v) => h("option", { value: v.vaseId, "data-connection": v.connection }, `${v.vaseId} (${v.connection.replaceAll("_", " ")})`)));
    select.value = free.some((v) => v.vaseId === chosen) ? chosen : "";
    select.dataset.free = String(free.length);
    hint.textContent = free.length
      ? `${free.length} free vase${free.length === 1 ? "" : "s"}: its readings give the bouquet its freshness.`
      : vases.length ? "Every vase of yours holds a bouquet." : "No vase yet: register one on the Vases page.";
  });
  return {
    element: h("div", {}, h("label", { for: "f-vaseId" }, "Vase", h("span", { class: "hint muted" }, " (optional: a free vase of your shop to stand it in)")), select, hint),
    load,
  };
}

function bouquetsSection(vendorId) {
  const list = h("div", { class: "grid", id: "vendor-bouquets" });
  const empty = h("p", { class: "muted" }, "Nothing listed yet.");
  const vases = freeVaseSelect(vendorId);
  // One row per bouquet, kept across refreshes: a refresh updates a row in place and never
  // replaces a form being edited.
  const rows = new Map();
  const load = async () => {
    const page = await api("GET", `/bouquets?vendorId=${vendorId}&limit=100`);
    const listed = new Set(page.items.map((b) => b.bouquetId));
    for (const bouquet of page.items) {
      let row = rows.get(bouquet.bouquetId);
      if (!row) {
        row = bouquetRow(bouquet, load);
        rows.set(bouquet.bouquetId, row);
        list.append(row.element);
      }
      row.update(bouquet);
    }
    // Reserved, sold or withdrawn since: off the catalogue, shown with its status and no
    // controls (one read each, of the rows on screen only).
    for (const [id, row] of rows) {
      if (!listed.has(id)) row.update(await api("GET", `/bouquets/${id}`));
    }
    empty.hidden = rows.size > 0;
  };
  const form = h("form", {
    novalidate: true,
    onsubmit: (e) => {
      e.preventDefault();
      const data = formJson(form);
      attempt(async () => {
        clearErrors(form);
        try {
          await api("POST", `/vendors/${vendorId}/bouquets`, {
            body: { name: data.name ?? "", description: data.description ?? "", price: { amount: data.price ?? "", currency: data.currency ?? "EUR" }, vaseId: data.vaseId },
          });
        } catch (error) {
          showErrors(form, error);
          return;
        }
        form.reset();
        say(form, `${data.name} is listed${data.vaseId ? ` in vase ${data.vaseId}` : ""}.`);
        await Promise.all([load(), vases.load()]);
      });
    },
  },
  field("Name", { name: "name", required: true }),
  field("Description", { tag: "textarea", name: "description", rows: 2 }),
  field("Price", { name: "price", required: true, inputmode: "decimal" }, "e.g. 24.50, EUR"),
  vases.element,
  h("p", {}, h("button", { type: "submit" }, "List bouquet")));
  return {
    section: h("section", {}, h("h2", {}, "Bouquets"), list, empty, h("h3", {}, "List a bouquet"), h("div", { id: "list-bouquet" }, form)),
    load: () => Promise.all([load(), vases.load()]),
    loadBouquets: load,
    loadVases: vases.load,
  };
}

/** One of the vendor's bouquets: its badges follow every change; its form keeps what the
 *  vendor typed, says so when the bouquet changed underneath, and saves at the version it was
 *  loaded from (a stale save is refused with both values shown). */
function bouquetRow(initial, reload) {
  let shown = initial; // what the form was loaded from
  let latest = initial;
  const id = initial.bouquetId;
  const badges = h("p", { class: "row" });
  const name = h("input", { name: "name", id: `name-${id}`, required: true });
  // The list price: while freshness has marked the bouquet down, the price it was listed at
  // (a price typed here is the new list price, and ends the markdown).
  const listPrice = (b) => b.listPrice ?? b.price;
  const price = h("input", { name: "price", id: `price-${id}`, required: true, inputmode: "decimal" });
  const fill = (b) => {
    shown = b;
    name.value = b.name;
    price.value = listPrice(b).amount;
  };
  const edited = () => name.value !== shown.name || price.value !== listPrice(shown).amount;
  // Kept at its list price whatever its freshness, or marked down by the shop's rule: saved as
  // soon as it is changed.
  const optOut = h("input", {
    type: "checkbox", id: `optout-${id}`, name: "markdownOptOut", class: "inline",
    onchange: () => attempt(async () => {
      const keep = optOut.checked;
      try {
        latest = await api("PATCH", `/bouquets/${id}`, { headers: { "if-match": `"${latest.version}"` }, body: { markdownOptOut: keep } });
      } catch (error) {
        optOut.checked = latest.markdownOptOut;
        showErrors(form, error);
        return;
      }
      // What is typed in the form stays, saved at the version this change made.
      shown = { ...shown, version: latest.version, markdownOptOut: latest.markdownOptOut };
      render(latest);
      say(form, keep ? "Kept at its list price whatever its freshness." : "Its price follows your markdown rule again.");
    }),
  });
  const controls = h("div", { class: "row", style: "margin-top:8px" });
  const form = h("form", {
    novalidate: true,
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        clearErrors(form);
        try {
          // The list price of a marked-down bouquet, untouched, is not sent: sending it would
          // set it again and end the markdown.
          const same = latest.listPrice && price.value === latest.listPrice.amount;
          latest = await api("PATCH", `/bouquets/${id}`, {
            headers: { "if-match": `"${shown.version}"` },
            body: { name: name.value, ...(same ? {} : { price: { amount: price.value, currency: shown.price.currency } }) },
          });
        } catch (error) {
          if (error.status === 412) {
            const current = await api("GET", `/bouquets/${id}`);
            latest = current;
            say(form, `Changed since you opened it: it is now "${current.name}" at ${money(listPrice(current))}; yours is "${name.value}" at ${price.value}. Save again to keep yours, or reload it.`, "error");
            shown = { ...current, name: shown.name, price: listPrice(shown), listPrice: undefined };
            shown.version = current.version;
            controls.querySelector("[data-reload]").hidden = false;
            render(latest);
            return;
          }
          showErrors(form, error);
          return;
        }
        fill(latest);
        render(latest);
        say(form, "Saved.");
      });
    },
  },
  h("div", {}, h("label", { for: `name-${id}` }, "Name"), name),
  h("div", {}, h("label", { for: `price-${id}` }, "Price"), price),
  h("div", {}, h("label", { for: `optout-${id}`, class: "check" }, optOut, " Keep at its list price (no markdown)")),
  controls);
  controls.append(
    h("button", { type: "submit", class: "secondary" }, "Save"),
    h("button", {
      type: "button", class: "secondary", "data-reload": "", hidden: true,
      onclick: () => { fill(latest); say(form, ""); controls.querySelector("[data-reload]").hidden = true; },
    }, "Reload it"),
    h("button", {
      type: "button", class: "secondary",
      onclick: () => attempt(async () => {
        try {
          latest = await api("DELETE", `/bouquets/${id}`, { headers: { "if-match": `"${latest.version}"` } });
        } catch (error) {
          showErrors(form, error);
          return;
        }
        say(form, `${shown.name} is withdrawn.`);
        render(latest);
        await reload();
      }),
    }, "Withdraw"));
  // The photo: shown as the storefront shows it; a new one uploaded straight to S3.
  const photoBox = h("div", { class: "photo-slot" });
  const file = h("input", { type: "file", name: "photo", id: `photo-${id}`, accept: "image/jpeg,image/png,image/webp" });
  const photoForm = h("form", {
    class: "photo-form",
    novalidate: true,
    onsubmit: (e) => {
      e.preventDefault();
      const chosen = file.files[0];
      if (!chosen) {
        say(photoForm, "Choose a photo first.", "error");
        return;
      }
      attempt(async () => {
        clearErrors(photoForm);
        say(photoForm, "Uploading…");
        let told;
        try {
          told = await uploadPhoto(`/bouquets/${id}/photo-uploads`, chosen);
        } catch (error) {
          showErrors(photoForm, error);
          return;
        }
        const box = say(photoForm, told.text, told.ok ? "ok" : "error");
        if (!told.ok) box.focus({ preventScroll: false });
        file.value = "";
        if (told.ok) render(await api("GET", `/bouquets/${id}`));
      });
    },
  },
  h("div", {}, h("label", { for: `photo-${id}` }, "Photo", h("span", { class: "hint muted" }, " (JPEG, PNG or WebP, up to 5 MB)")), file),
  h("p", {}, h("button", { type: "submit", class: "secondary" }, "Upload photo")));
  const element = h("article", { class: "card", "data-bouquet": id }, photoBox, badges, form, photoForm);
  const render = (b) => {
    element.dataset.status = b.status;
    photoBox.replaceChildren(picture(b));
    badges.replaceChildren(statusBadge(b.status), freshnessBadge(b.freshness, Boolean(b.vaseId)), h("span", { class: "muted" }, `v${b.version}`),
      priceTag(b), ...(b.vaseId ? [h("span", { class: "muted" }, "in vase ", h("code", {}, b.vaseId))] : []));
    optOut.checked = Boolean(b.markdownOptOut);
    const open = b.status === "available";
    for (const control of form.querySelectorAll("input, button[type=submit]")) control.disabled = !open;
    controls.querySelector("button[type=button]:last-child").hidden = !open;
  };
  fill(initial);
  return {
    element,
    update(b) {
      const changed = b.version !== latest.version;
      latest = b;
      render(b);
      if (!changed) return;
      if (!edited() && b.status === "available") {
        fill(b);
      } else if (b.status === "available" && (b.name !== shown.name || listPrice(b).amount !== listPrice(shown).amount)) {
        // The vendor is typing: keep it, and say what changed underneath.
        say(form, `Changed since you opened it: now "${b.name}" at ${money(listPrice(b))}. Your edit is kept; saving it is refused until you choose.`, "error");
        controls.querySelector("[data-reload]").hidden = false;
      } else if (b.status !== "available") {
        say(form, `Now ${b.status.replaceAll("_", " ")}: it can no longer be changed.`, "error");
      } else {
        // A reading or a markdown moved it, not what is being typed: saved at the new version.
        shown = { ...shown, version: b.version };
      }
    },
  };
}

// A care alert's condition, in words; and which chart shows it.
const CONDITIONS = {
  water_low: "Water low", too_hot: "Too hot", too_cold: "Too cold",
  too_dark: "Too dark", too_bright: "Too bright", offline: "Offline",
};
const CHARTED = { water: ["water_low"], temperature: ["too_hot", "too_cold"] };

/** What a vase read, in short: "water 12 %, 18 °C, 500 lux". */
function readingText(r) {
  return r ? `water ${r.waterLevelPct} %, ${r.temperatureC} °C, ${r.lightLux} lux` : "–";
}

/** The shop's care alerts, newest first: each open one not yet acknowledged with its button.
 *  `acknowledged()` is told when one was (the header's count follows). */
function alertsSection(vendorId, acknowledged) {
  const body = h("tbody", { id: "vase-alerts" });
  const more = h("p", { class: "muted", hidden: true }, "The 100 newest alerts are shown.");
  let items = [];
  const acknowledge = (alert) => attempt(async () => {
    try {
      await api("POST", `/vendors/${vendorId}/alerts/${encodeURIComponent(alert.alertId)}/acknowledge`);
      notify(`${CONDITIONS[alert.condition]} on vase ${alert.vaseId}: acknowledged.`, "ok");
    } catch (error) {
      if (error.code !== "alert.already_acknowledged") throw error;
      notify(error.message, "ok");
    }
    await load();
    acknowledged();
  });
  const row = (a) => {
    const open = !a.closedAt;
    return h("tr", {
      "data-alert": a.alertId, "data-vase": a.vaseId, "data-condition": a.condition,
      "data-state": open ? "open" : "closed", "data-acknowledged": a.acknowledgedAt ? "yes" : "no",
    },
    h("td", {}, h("span", { class: `badge ${open ? "alert-open" : "muted"}` }, CONDITIONS[a.condition] ?? a.condition)),
    h("td", {}, h("code", {}, a.vaseId)),
    h("td", {}, readingText(a.reading)),
    h("td", {}, when(a.openedAt)),
    h("td", {}, open ? h("strong", {}, "open") : `closed ${when(a.closedAt)}`),
    h("td", {}, a.acknowledgedAt
      ? h("span", { class: "muted" }, `by ${a.acknowledgedBy ?? "–"}, ${when(a.acknowledgedAt)}`)
      : h("button", {
        type: "button", class: open ? "" : "secondary",
        "aria-label": `Acknowledge ${CONDITIONS[a.condition] ?? a.condition} on vase ${a.vaseId}`,
        onclick: () => acknowledge(a),
      }, "Acknowledge")));
  };
  const load = serially(async () => {
    const page = await api("GET", `/vendors/${vendorId}/alerts?limit=100`);
    items = page.items;
    more.hidden = !page.nextCursor;
    drawRows(body, items, (a) => a.alertId, row,
      h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No care alerts in the last 30 days.")));
  });
  return {
    section: h("section", { id: "care-alerts", "aria-labelledby": "care-alerts-title" },
      h("h2", { id: "care-alerts-title" }, "Care alerts"),
      h("p", { class: "muted" }, "A vase raises one alert per condition while it lasts; it closes once the readings have been clear for the time set in Settings. Acknowledging says someone is on it."),
      h("div", { class: "table-wrap" }, h("table", { class: "console-table" },
        h("thead", {}, h("tr", {}, ...["Condition", "Vase", "Reading when it opened", "Opened", "State", "Acknowledged"].map((t) => h("th", { scope: "col" }, t)))),
        body)),
      more),
    load,
    /** The alerts read last (of one vase, with `vaseId`). */
    items: (vaseId) => items.filter((a) => !vaseId || a.vaseId === vaseId),
  };
}

function vasesSection(vendorId, alerts) {
  const body = h("tbody", {});
  const detail = h("div", { id: "vase-detail" });
  const history = h("div", { id: "vase-history" });
  // The readings of the quarter of an hour before the vase's latest (raw readings are kept
  // 48 hours), and the day's 15-minute summaries; the periods of its alerts shaded.
  const showReadings = (vase) => attempt(async () => {
    const vaseId = vase.vaseId;
    const latest = vase.latestReading?.sentAt;
    const since = latest ? `&since=${encodeURIComponent(new Date(Date.parse(latest) - 15 * 60_000).toISOString())}` : "";
    const page = await api("GET", `/vases/${vaseId}/telemetry?limit=100${since}`);
    const readings = [...page.items].sort((a, b) => a.sentAt.localeCompare(b.sentAt));
    const periods = alerts.items(vaseId);
    const during = (conditions, at) => periods.some((a) => conditions.includes(a.condition)
      && Date.parse(a.openedAt) <= Date.parse(at) && (!a.closedAt || Date.parse(at) <= Date.parse(a.closedAt)));
    const labels = readings.map((r) => new Date(r.sentAt).toLocaleTimeString());
    detail.replaceChildren(h("h3", {}, `Readings of ${vaseId}`), readings.length
      ? h("div", {},
          chart({ title: "Water level %", labels, values: readings.map((r) => r.waterLevelPct), max: 100,
            marks: readings.map((r) => during(CHARTED.water, r.sentAt)), markLabel: "water low alert open" }),
          chart({ title: "Temperature °C", labels, values: readings.map((r) => r.temperatureC),
            marks: readings.map((r) => during(CHARTED.temperature, r.sentAt)), markLabel: "temperature alert open" }))
      : h("p", { class: "muted" }, "No readings yet."));
    const buckets = page.buckets ?? [];
    history.replaceChildren(...(buckets.length > 1 ? [
      h("h3", {}, "The last 24 hours, by quarter of an hour"),
      chart({ title: "Water level %, mean per 15 minutes", labels: buckets.map((b) => new Date(b.start).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })),
        values: buckets.map((b) => Math.round(b.waterLevelPct.mean * 10) / 10), max: 100,
        marks: buckets.map((b) => during(CHARTED.water, b.start)), markLabel: "water low alert open" }),
    ] : []));
  });
  const load = serially(async () => {
    const vases = await allItems(`/vendors/${vendorId}/vases`);
    drawRows(body, vases, (v) => v.vaseId, (v) => h("tr", { "data-vase": v.vaseId, "data-alerts": (v.alerts ?? []).length },
      h("td", {}, h("code", {}, v.vaseId)),
      h("td", {}, statusBadge(v.connection)),
      h("td", {}, when(v.lastHeartbeatAt)),
      h("td", {}, v.latestReading ? `water ${v.latestReading.waterLevelPct}%, ${v.latestReading.temperatureC} °C` : "–"),
      h("td", {}, v.bouquetId ? freshnessBadge(v.freshness) : "empty"),
      h("td", { "data-field": "alerts" }, (v.alerts ?? []).length
        ? h("span", { class: "row" }, v.alerts.map((a) => h("span", { class: "badge alert-open", "data-condition": a.condition },
            `${CONDITIONS[a.condition] ?? a.condition} since ${new Date(a.openedAt).toLocaleTimeString()}${a.clearSince ? ", clearing" : ""}`)))
        : h("span", { class: "muted" }, "none")),
      h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": `Readings of vase ${v.vaseId}`, onclick: () => showReadings(v) }, "Readings"))),
    h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No vase yet.")));
  });
  const credentials = h("div", { id: "vase-credentials" });
  const register = h("button", {
    type: "button",
    onclick: () => attempt(async () => {
      const registered = await api("POST", `/vendors/${vendorId}/vases`);
      const vase = { ...registered, vaseId: registered.vase.vaseId };
      const download = h("a", {
        class: "button", download: `${vase.vaseId}.private.pem`,
        href: URL.createObjectURL(new Blob([vase.privateKey], { type: "application/x-pem-file" })),
      }, "Download the private key");
      credentials.replaceChildren(h("div", { class: "card" },
        h("h3", {}, `Vase ${vase.vaseId} registered`),
        h("p", {}, h("strong", {}, "The private key is shown this once. "), "Download it now and put it on the vase with the certificate."),
        download,
        h("p", { class: "muted" }, `MQTT endpoint ${vase.iotEndpoint}`),
        h("details", {}, h("summary", {}, "Certificate"), h("pre", { class: "key" }, vase.certificatePem))));
      await load();
    }),
  }, "Register a vase");
  return {
    section: h("section", {}, h("h2", {}, "Vases"),
      h("div", { class: "table-wrap" }, h("table", { class: "console-table", id: "vases" },
        h("thead", {}, h("tr", {}, ...["Vase", "Connection", "Last heartbeat", "Latest reading", "Bouquet", "Open alerts", ""].map((t) => h("th", { scope: "col" }, t)))), body)),
      h("p", {}, register), credentials),
    charts: h("section", { "aria-label": "Readings" }, detail, history),
    load,
  };
}

/** The proof of delivery of one order: a photo sent with the shared upload (a signed form
 *  straight to S3, then the photo function's answer), said beside it. `update(order)` says
 *  whether one is attached. */
function deliveryPhotoForm(orderId) {
  const id = `delivery-photo-${orderId}`;
  const file = h("input", { type: "file", name: "photo", id, accept: PHOTO_TYPES.join(",") });
  const attached = h("p", { class: "muted", hidden: true }, "A photo is attached; the customer sees it. A new one replaces it.");
  const form = h("form", {
    class: "photo-form", novalidate: true, "data-delivery-photo": orderId,
    onsubmit: (e) => {
      e.preventDefault();
      const chosen = file.files[0];
      if (!chosen) {
        say(form, "Choose a photo first.", "error");
        return;
      }
      attempt(async () => {
        clearErrors(form);
        say(form, "Uploading…");
        let told;
        try {
          told = await uploadPhoto(`/orders/${orderId}/delivery-photo-uploads`, chosen, {
            done: "The delivery photo is in: the customer sees it on the order.", refused: "Choose another photo.",
          });
        } catch (error) {
          showErrors(form, error);
          return;
        }
        const box = say(form, told.text, told.ok ? "ok" : "error");
        if (!told.ok) box.focus({ preventScroll: false });
        file.value = "";
        if (told.ok) {
          form.dataset.attached = "yes";
          attached.hidden = false;
        }
      });
    },
  },
  h("div", {}, h("label", { for: id }, "Delivery photo", h("span", { class: "hint muted" }, " (JPEG, PNG or WebP, up to 5 MB)")), file),
  attached,
  h("p", {}, h("button", { type: "submit", class: "secondary", "aria-label": `Attach delivery photo to order ${orderId}` }, "Attach delivery photo")));
  return {
    form,
    update(order) {
      if (!order.deliveryPhotoAttached) return;
      form.dataset.attached = "yes";
      attached.hidden = false;
    },
  };
}

function ordersSection() {
  const body = h("tbody", { id: "vendor-orders" });
  const delivered = h("tbody", { id: "vendor-delivered" });
  // One photo form per order, kept across the board's redraws: a live update during an upload
  // leaves the file chosen and what the form says.
  const photoForms = new Map();
  const photoForm = (o) => {
    if (!photoForms.has(o.orderId)) photoForms.set(o.orderId, deliveryPhotoForm(o.orderId));
    const kept = photoForms.get(o.orderId);
    kept.update(o);
    return kept.form;
  };
  // Rows of unchanged orders stay as they are across redraws: a live event about one order
  // leaves the focus on another's button.
  const load = serially(async () => {
    const today = new Date().toISOString().slice(0, 10);
    // Sold and not yet delivered, in delivery order (date, slot), from the shop's history index;
    // and delivered, for two weeks, the latest first (a photo of the delivery may follow).
    const [page, done] = await Promise.all([
      api("GET", "/orders?status=paid,accepted,out_for_delivery&limit=50"),
      api("GET", `/orders?status=fulfilled&deliveryFrom=${daysBefore(today, 14)}&deliveryTo=${daysBefore(today, -90)}&limit=50`),
    ]);
    const open = page.items;
    // One button per step the order may take next (the API refuses any other).
    const step = (o, route, label) => h("button", {
      type: "button", class: route === "reject" ? "secondary" : "", "aria-label": `${label} order ${o.orderId}`,
      onclick: () => attempt(async () => {
        let options;
        if (route === "reject") {
          const reason = window.prompt("Why? The customer reads this, and is refunded.");
          if (!reason || !reason.trim()) return;
          const withdraw = window.confirm("Take the bouquets off sale too? (Cancel puts them back on sale.)");
          options = { body: { reason: reason.trim(), withdrawBouquets: withdraw } };
        }
        await api("POST", `/orders/${o.orderId}/${route}`, options);
        await load();
      }),
    }, label);
    const steps = (o) => ({
      paid: [step(o, "accept", "Accept"), step(o, "fulfil", "Fulfil"), step(o, "reject", "Reject")],
      accepted: [step(o, "dispatch", "Out for delivery"), step(o, "fulfil", "Fulfil"), step(o, "reject", "Reject")],
      out_for_delivery: [step(o, "fulfil", "Fulfil")],
    })[o.status] ?? [];
    const dueOn = (d) => d ? h("span", {}, d.date <= today ? h("strong", { class: "badge", "data-today": "" }, d.date < today ? "late" : "today") : d.date,
      d.slot ? ` ${d.slot}` : "") : "–";
    drawRows(body, open, (o) => o.orderId, (o) => h("tr", { "data-order": o.orderId, "data-status": o.status },
      h("td", {}, dueOn(o.delivery)),
      h("td", {}, h("a", { href: `#/orders/${o.orderId}` }, o.lines.map((l) => l.name).join(", ")), " ", money(o.total)),
      h("td", { "data-field": "deliver-to" }, o.delivery
        ? [h("div", {}, `${o.delivery.recipientName}, ${o.delivery.recipientPhone}`),
          h("div", { class: "muted" }, `${o.delivery.address.street}, ${o.delivery.address.postcode} ${o.delivery.address.city}`),
          o.delivery.cardMessage ? h("div", { class: "muted" }, `Card: “${o.delivery.cardMessage}”`) : null]
        : "–"),
      h("td", {}, statusBadge(o.status)),
      h("td", {}, h("div", { class: "row" }, ...steps(o)), o.status === "out_for_delivery" ? photoForm(o) : null)),
    h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No orders to deliver.")));
    const recent = [...done.items].reverse();
    drawRows(delivered, recent, (o) => o.orderId, (o) => h("tr", { "data-order": o.orderId, "data-status": o.status },
      h("td", {}, o.delivery ? o.delivery.date : "–"),
      h("td", {}, h("a", { href: `#/orders/${o.orderId}` }, o.lines.map((l) => l.name).join(", ")), " ", money(o.total)),
      h("td", {}, photoForm(o))),
    h("tr", {}, h("td", { colspan: 3, class: "muted" }, "Nothing delivered in the last two weeks.")));
    const shown = new Set([...open, ...recent].map((o) => o.orderId));
    for (const orderId of photoForms.keys()) if (!shown.has(orderId)) photoForms.delete(orderId);
  });
  return {
    section: h("section", {}, h("h2", {}, "Deliveries"), h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, ...["When", "Bouquets", "Deliver to", "Status", ""].map((t) => h("th", {}, t)))), body)),
    h("h3", {}, "Delivered"),
    h("p", { class: "muted" }, "The last two weeks' deliveries. A photo of the delivery shows on the customer's order, to the customer only."),
    h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, ...["Day", "Bouquets", "Proof of delivery"].map((t) => h("th", {}, t)))), delivered))),
    load,
  };
}

const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/** Basis points as the percentage typed: 550 → "5.5". */
const percent = (basisPoints) => String((basisPoints ?? 0) / 100);

/** A typed percentage in basis points ("5,5 %" → 550); empty: 0; `null` if it is not one. */
function basisPoints(text) {
  const typed = String(text ?? "").trim().replace(/\s*%$/, "").replace(",", ".");
  if (typed === "") return 0;
  return /^\d{1,3}(\.\d{1,2})?$/.test(typed) ? Math.round(Number(typed) * 100) : null;
}

/** The zones' textarea, a line `PREFIX FEE` each (`75 3.00`), as the API's zones; the lines it
 *  cannot read come back as field errors (`fees.zones[i]`). */
function zonesOf(text) {
  const zones = [], errors = [];
  String(text ?? "").split("\n").map((l) => l.trim()).filter(Boolean).forEach((line, i) => {
    const words = line.split(/[\s:=;]+/).filter(Boolean);
    if (words.length < 2) {
      errors.push({ field: `fees.zones[${i}]`, message: `must be a postcode prefix and a fee, such as 75 3.00 (not "${line}")` });
      return;
    }
    zones.push({ postcodePrefix: words.slice(0, -1).join(""), fee: words.at(-1).replace(",", ".") });
  });
  return { zones, errors };
}

/** The API's errors on the zones' lines, said with the line they are on. */
function onLines(errors) {
  return errors.map((e) => {
    const line = /^fees\.zones\[(\d+)\](?:\.(\w+))?$/.exec(e.field ?? "");
    if (!line) return e;
    const what = { fee: "the fee ", postcodePrefix: "the postcode prefix " }[line[2]] ?? "";
    return { ...e, message: `on line ${Number(line[1]) + 1}: ${what}${e.message}` };
  });
}

/** Where, when and how far ahead the shop delivers, what delivery costs and the VAT on the
 *  receipts: what the checkout holds customers to. */
function deliverySettingsSection(vendorId) {
  const slot = h("div", {});
  // A refresh (the live connection opening again) leaves a form being edited as it is: saving
  // it at the version it was loaded from is refused if the settings changed meanwhile.
  let edited = false;
  const load = async ({ force = false } = {}) => {
    const current = await api("GET", `/vendors/${vendorId}/delivery-settings`);
    if (edited && !force) return;
    edited = false;
    const fees = current.fees ?? {};
    const vat = current.vat ?? {};
    const form = h("form", {
      id: "delivery-settings",
      oninput: () => { edited = true; },
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          clearErrors(form);
          const data = new FormData(form);
          const list = (name) => String(data.get(name) ?? "").split(",").map((t) => t.trim()).filter(Boolean);
          const typed = (name) => String(data.get(name) ?? "").trim();
          const zones = zonesOf(data.get("fees.zones"));
          const flowers = basisPoints(data.get("vat.flowersBasisPoints"));
          const delivery = basisPoints(data.get("vat.deliveryBasisPoints"));
          const unread = [...zones.errors,
            ...[["vat.flowersBasisPoints", flowers], ["vat.deliveryBasisPoints", delivery]]
              .filter(([, rate]) => rate === null)
              .map(([name]) => ({ field: name, message: "must be a percentage, such as 5.5 or 20" }))];
          if (unread.length) {
            showErrors(form, { body: { errors: onLines(unread) } });
            return;
          }
          const body = {
            countries: list("countries"), postcodePrefixes: list("postcodePrefixes"),
            days: WEEKDAYS.filter((d) => data.get(`day-${d}`)),
            horizonDays: Number(data.get("horizonDays")), sameDayCutoff: data.get("sameDayCutoff"), timeZone: data.get("timeZone"),
            ...(data.get("contactEmail") ? { contactEmail: data.get("contactEmail") } : {}),
            // Amounts as typed (the API normalises "4.5" to "4.50"); empty: none (free).
            fees: {
              ...(typed("fees.standard") ? { standard: typed("fees.standard").replace(",", ".") } : {}),
              zones: zones.zones,
              ...(typed("fees.sameDaySurcharge") ? { sameDaySurcharge: typed("fees.sameDaySurcharge").replace(",", ".") } : {}),
            },
            vat: {
              ...(typed("vat.number") ? { number: typed("vat.number") } : {}),
              flowersBasisPoints: flowers, deliveryBasisPoints: delivery,
            },
          };
          const headers = current.version ? { "if-match": `"${current.version}"` } : {};
          try {
            await api("PUT", `/vendors/${vendorId}/delivery-settings`, { body, headers });
          } catch (error) {
            if (error.status !== 400) throw error;
            if (error.body?.errors) error.body.errors = onLines(error.body.errors);
            showErrors(form, error);
            return;
          }
          notify("Delivery settings saved.", "ok");
          await load({ force: true });
        });
      },
    },
    field("Countries", { name: "countries", value: current.countries.join(", "), required: true }, "ISO codes, comma-separated"),
    field("Postcodes starting with", { name: "postcodePrefixes", value: current.postcodePrefixes.join(", ") }, "comma-separated; empty: all"),
    h("fieldset", {}, h("legend", {}, "Delivery days"),
      h("div", { class: "row" }, WEEKDAYS.map((d) => h("label", { style: "font-weight:400" },
        h("input", { type: "checkbox", name: `day-${d}`, checked: current.days.includes(d), style: "width:auto" }), ` ${d.slice(0, 3)}`)))),
    h("div", { class: "row" },
      field("Days ahead", { name: "horizonDays", type: "number", min: 0, max: 90, value: current.horizonDays, required: true }),
      field("Same-day until", { name: "sameDayCutoff", type: "time", value: current.sameDayCutoff, required: true }),
      field("Time zone", { name: "timeZone", value: current.timeZone, required: true })),
    h("fieldset", { id: "delivery-fees" }, h("legend", {}, "Delivery fees (VAT included, in your prices' currency)"),
      h("div", { class: "row" },
        field("Standard delivery fee", { name: "fees.standard", id: "f-fees-standard", inputmode: "decimal", value: fees.standard ?? "", placeholder: "0.00" }, "where no zone applies"),
        field("Same-day surcharge", { name: "fees.sameDaySurcharge", id: "f-fees-sameDaySurcharge", inputmode: "decimal", value: fees.sameDaySurcharge ?? "", placeholder: "0.00" }, "added for delivery today")),
      field("Fees by postcode", {
        tag: "textarea", name: "fees.zones", id: "f-fees-zones", rows: 3, placeholder: "75 3.00",
      }, "a zone a line: postcode prefix and fee, e.g. 75 3.00; the longest prefix that matches wins")),
    h("fieldset", { id: "vat-settings" }, h("legend", {}, "VAT on your receipts"),
      field("VAT number", { name: "vat.number", id: "f-vat-number", value: vat.number ?? "", autocomplete: "off" }, "optional, e.g. FR12345678901"),
      h("div", { class: "row" },
        field("VAT on flowers (%)", { name: "vat.flowersBasisPoints", id: "f-vat-flowers", inputmode: "decimal", value: percent(vat.flowersBasisPoints) }, "e.g. 5.5"),
        field("VAT on delivery (%)", { name: "vat.deliveryBasisPoints", id: "f-vat-delivery", inputmode: "decimal", value: percent(vat.deliveryBasisPoints) }, "e.g. 20"))),
    field("Contact email", { name: "contactEmail", type: "email", value: current.contactEmail ?? "", placeholder: current.contactEmailSet ? "saved (private); type a new one to change it" : "" }, `new paid orders are sent here; only your shop sees it. It must be the address you signed in with${session.email() ? ` (${session.email()})` : ""}`),
    h("button", { type: "submit" }, "Save delivery settings"));
    form.elements.namedItem("fees.zones").value = (fees.zones ?? []).map((z) => `${z.postcodePrefix} ${z.fee}`).join("\n");
    slot.replaceChildren(form);
  };
  return { section: h("section", {}, h("h2", {}, "Delivery settings"), slot), load };
}

/** A typed number ("2,5" → 2.5); empty: `null`; `NaN` when it is not one. */
function numberOf(text) {
  const typed = String(text ?? "").trim().replace(",", ".");
  return typed === "" ? null : /^-?\d+(\.\d+)?$/.test(typed) ? Number(typed) : NaN;
}

const MAX_STEPS = 8;
// The care thresholds: the API's name, the label, its hint.
const CARE_FIELDS = [
  ["waterLowPct", "Water below (%)", "e.g. 25"],
  ["temperatureMaxC", "Warmer than (°C)", "e.g. 24"],
  ["temperatureMinC", "Colder than (°C)", "e.g. 2"],
  ["lightMinLux", "Darker than (lux)", "empty: shops are dark at night"],
  ["lightMaxLux", "Brighter than (lux)", "e.g. 30000, direct sun"],
];

/** The shop's vase rules: how freshness marks its bouquets down (steps, a floor, a score below
 *  which a bouquet leaves the storefront; off until switched on) and when its vases raise care
 *  alerts. A refresh leaves a form being edited as it is; saving it at the version it was loaded
 *  from is refused if the rules changed meanwhile. */
function vaseRulesSection(vendorId) {
  const slot = h("div", {});
  let edited = false;
  let rows = 0; // step rows drawn so far: each its own ids
  const load = async ({ force = false } = {}) => {
    const current = await api("GET", `/vendors/${vendorId}/vase-rules`);
    if (edited && !force) return null;
    edited = false;
    const { markdown, care } = current;
    const steps = h("div", { id: "markdown-steps" });
    const addStep = (step) => {
      const i = steps.children.length;
      const n = rows++;
      steps.append(h("div", { class: "row", "data-step": i },
        field(`Step ${i + 1}: below freshness`, { name: `markdown.steps[${i}].below`, id: `f-step-${n}-below`, type: "number", min: 1, max: 100, value: step?.below ?? "" }),
        field(`Step ${i + 1}: % off the list price`, { name: `markdown.steps[${i}].offBasisPoints`, id: `f-step-${n}-off`, inputmode: "decimal", value: step ? percentOf(step.offBasisPoints).replace(/\s/g, "") : "" })));
      addButton.hidden = steps.children.length >= MAX_STEPS;
    };
    const addButton = h("button", { type: "button", class: "secondary", onclick: () => { edited = true; addStep(null); } }, "Add a step");
    markdown.steps.forEach(addStep);
    if (!markdown.steps.length) addStep(null);
    const form = h("form", {
      id: "vase-rules", novalidate: true, "aria-label": "Vase rules",
      oninput: () => { edited = true; },
      onsubmit: (e) => {
        e.preventDefault();
        attempt(async () => {
          clearErrors(form);
          const data = new FormData(form);
          const unread = [];
          // Each step row as typed: a row left empty is no step; the API keeps them highest
          // score first, so they are sent in that order and its errors named by row again.
          const typed = [];
          for (let i = 0; i < steps.children.length; i++) {
            const below = numberOf(data.get(`markdown.steps[${i}].below`));
            const offText = String(data.get(`markdown.steps[${i}].offBasisPoints`) ?? "").trim();
            if (below === null && !offText) continue;
            const off = offText ? basisPoints(offText) : null;
            if (below === null || Number.isNaN(below) || !Number.isInteger(below)) unread.push({ field: `markdown.steps[${i}].below`, message: "must be a whole score from 1 to 100" });
            if (off === null) unread.push({ field: `markdown.steps[${i}].offBasisPoints`, message: "must be a percentage, such as 10 or 12.5" });
            typed.push({ row: i, below, offBasisPoints: off });
          }
          const number = (name, whole = false) => {
            const value = numberOf(data.get(name));
            if (Number.isNaN(value) || (whole && value !== null && !Number.isInteger(value))) {
              unread.push({ field: name, message: whole ? "must be a whole number" : "must be a number" });
            }
            return value;
          };
          const floor = basisPoints(data.get("markdown.floorBasisPoints"));
          if (floor === null) unread.push({ field: "markdown.floorBasisPoints", message: "must be a percentage, such as 50" });
          const withdrawBelow = number("markdown.withdrawBelow", true);
          const thresholds = Object.fromEntries(CARE_FIELDS.map(([name]) => [name, number(`care.${name}`)]));
          const clearAfter = number("care.clearAfterMinutes", true);
          if (clearAfter === null) unread.push({ field: "care.clearAfterMinutes", message: "is needed: minutes from 1 to 1440" });
          if (unread.length) {
            showErrors(form, { body: { errors: unread } });
            return;
          }
          const sorted = [...typed].sort((a, b) => b.below - a.below);
          const body = {
            markdown: {
              enabled: data.get("markdown.enabled") === "on",
              steps: sorted.map(({ below, offBasisPoints }) => ({ below, offBasisPoints })),
              floorBasisPoints: floor,
              ...(withdrawBelow === null ? {} : { withdrawBelow }),
            },
            care: { ...thresholds, clearAfterMinutes: clearAfter },
          };
          const headers = current.version ? { "if-match": `"${current.version}"` } : {};
          try {
            await api("PUT", `/vendors/${vendorId}/vase-rules`, { body, headers });
          } catch (error) {
            if (error.status === 412) {
              say(form, "The vase rules changed since you opened them (in another tab?). Reload the page to see them; what you typed is not saved.", "error");
              return;
            }
            if (error.status !== 400) throw error;
            // `markdown.steps[k]` is the k-th step sent: named by the row it was typed in.
            for (const e of error.body?.errors ?? []) {
              e.field = (e.field ?? "").replace(/^markdown\.steps\[(\d+)\]/, (_, k) => `markdown.steps[${sorted[Number(k)]?.row ?? k}]`);
            }
            showErrors(form, error);
            return;
          }
          const saved = await load({ force: true });
          if (saved) say(saved, "Vase rules saved: each vase's next reading applies them.").focus({ preventScroll: true });
        });
      },
    },
    h("fieldset", { id: "markdown-rule" }, h("legend", {}, "Prices that follow freshness"),
      h("p", { class: "muted" }, "As a bouquet's freshness falls below a step's score, its price drops by that step; it never rises again until you set a new price or place a new bouquet."),
      h("div", {}, h("label", { for: "f-markdown-enabled", class: "check" },
        h("input", { type: "checkbox", name: "markdown.enabled", id: "f-markdown-enabled", class: "inline", checked: markdown.enabled }),
        " Mark bouquets down as their freshness falls")),
      steps,
      h("p", { class: "muted" }, "Empty a step's fields to remove it."),
      h("p", {}, addButton),
      h("div", { class: "row" },
        field("Never below (% of the list price)", { name: "markdown.floorBasisPoints", id: "f-markdown-floor", inputmode: "decimal", value: percentOf(markdown.floorBasisPoints).replace(/\s/g, "") }, "e.g. 50"),
        field("Take off sale below freshness", { name: "markdown.withdrawBelow", id: "f-markdown-withdraw", type: "number", min: 0, max: 100, value: markdown.withdrawBelow ?? "" }, "empty: never"))),
    h("fieldset", { id: "care-thresholds" }, h("legend", {}, "Care alerts"),
      h("p", { class: "muted" }, "A vase raises an alert when a reading passes a threshold; leave one empty to turn it off."),
      h("div", { class: "row" }, CARE_FIELDS.map(([name, label, hint]) =>
        field(label, { name: `care.${name}`, id: `f-care-${name}`, inputmode: "decimal", value: care[name] ?? "" }, hint))),
      field("Close an alert once clear for (minutes)", { name: "care.clearAfterMinutes", id: "f-care-clearAfterMinutes", type: "number", min: 1, max: 1440, value: care.clearAfterMinutes, required: true }, "1 to 1440")),
    h("button", { type: "submit" }, "Save vase rules"));
    slot.replaceChildren(form);
    return form;
  };
  return {
    section: h("section", { "aria-labelledby": "vase-rules-title" }, h("h2", { id: "vase-rules-title" }, "Vase rules"), slot),
    load,
  };
}

/** The shop's payouts: its account at the payment provider, set up on the provider's own
 *  onboarding page. Until it takes charges, customers cannot reserve the shop's bouquets. */
function payoutsSection(vendorId) {
  const state = h("p", { id: "payouts-state", "data-payouts": "unknown" },
    "Customers can reserve your bouquets once your payout account takes payments.");
  const show = (charges) => {
    state.dataset.payouts = charges ? "ready" : "not-ready";
    state.textContent = charges
      ? "Your shop takes payments: each order is paid to your account, less the marketplace's commission."
      : "Your payout account is not finished: customers cannot reserve your bouquets yet.";
  };
  const start = h("button", {
    type: "button", id: "start-payouts",
    onclick: () => attempt(async () => {
      const back = `${location.origin}/#/vendor/money`;
      const onboarding = await api("POST", `/vendors/${vendorId}/payouts/onboarding`, { body: { returnUrl: back, refreshUrl: back } });
      show(onboarding.chargesEnabled);
      // Not finished: on to the provider's page, which comes back here.
      if (!onboarding.chargesEnabled) location.assign(onboarding.url);
    }),
  }, "Set up or check payouts");
  return { section: h("section", { id: "payouts" }, h("h2", {}, "Payouts"), state, start), show };
}

function analyticsSection(vendorId) {
  const charts = h("div", {});
  const load = async () => {
    const report = await api("GET", `/vendors/${vendorId}/analytics`);
    const days = report.days;
    if (!days.length) {
      charts.replaceChildren(h("p", { class: "muted" }, "No sales in the last 30 days."));
      return;
    }
    const labels = days.map((d) => d.date.slice(5));
    charts.replaceChildren(
      chart({ title: "Sales per day", labels, values: days.map((d) => d.sales), kind: "bar" }),
      chart({ title: `Revenue per day (${days.find((d) => d.revenue.length)?.revenue[0].currency ?? "EUR"})`, labels, kind: "bar",
        values: days.map((d) => Number(d.revenue[0]?.amount ?? 0)) }),
      chart({ title: "Average freshness at sale", labels, values: days.map((d) => d.averageFreshness), max: 100 }));
  };
  return { section: h("section", {}, h("h2", {}, "Analytics (30 days)"), charts), load };
}

/** `YYYY-MM-DD` (UTC, the days the API counts in) `days` before `date`. */
function daysBefore(date, days) {
  return new Date(Date.parse(`${date}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}

// `payouts`: what the payment provider paid out to the shop's bank, arriving that day.
const EARNINGS_COLUMNS = [["gross", "Gross"], ["fees", "Fees"], ["refunds", "Refunds"], ["feesRefunded", "Fees refunded"], ["net", "Net"], ["payouts", "Paid out"]];

/** What the shop earned per day (gross, the marketplace's fees, refunds, net) over a period, the
 *  net per day as a chart, and the same period as a CSV file. */
function earningsSection(vendorId) {
  const today = new Date().toISOString().slice(0, 10);
  const body = h("tbody", {});
  const foot = h("tfoot", {});
  const charts = h("div", {});
  const form = h("form", {
    id: "earnings-period", novalidate: true, "aria-label": "Earnings period",
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        clearErrors(form);
        await load();
      });
    },
  },
  h("div", { class: "row" },
    field("From", { name: "from", id: "earnings-from", type: "date", value: daysBefore(today, 29), required: true }),
    field("To", { name: "to", id: "earnings-to", type: "date", value: today, required: true })),
  h("p", { class: "row" },
    h("button", { type: "submit", class: "secondary" }, "Show"),
    h("button", { type: "button", id: "earnings-csv", onclick: () => attempt(download) }, "Download CSV")));
  const period = () => ({ from: form.elements.namedItem("from").value, to: form.elements.namedItem("to").value });
  const path = ({ from, to }) => `/vendors/${vendorId}/earnings?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
  const cells = (day) => [
    h("td", { "data-field": "orders" }, day.orders),
    ...EARNINGS_COLUMNS.map(([name]) => h("td", { "data-field": name, "data-amount": day[name]?.amount, class: "amount" }, money(day[name]))),
  ];
  // A refused period is said beside its field; a failed read in the section, not over the page.
  const failed = (error) => {
    if (error.status === 400) showErrors(form, error);
    else say(form, `The earnings could not be read: ${error.message}`, "error");
  };
  async function load() {
    let report;
    try {
      report = await api("GET", path(period()));
    } catch (error) {
      failed(error);
      return;
    }
    body.replaceChildren(...report.days.map((d) => h("tr", { "data-date": d.date, "data-currency": d.net.currency },
      h("th", { scope: "row" }, d.date), ...cells(d))));
    if (!report.days.length) body.append(h("tr", {}, h("td", { colspan: 2 + EARNINGS_COLUMNS.length, class: "muted" }, `Nothing earned from ${report.from} to ${report.to}.`)));
    foot.replaceChildren(...report.totals.map((t) => h("tr", { "data-total": t.net.currency },
      h("th", { scope: "row" }, `Total ${report.from} to ${report.to}`), ...cells(t))));
    const currency = report.days[0]?.net.currency;
    const days = report.days.filter((d) => d.net.currency === currency);
    charts.replaceChildren(...(days.length
      ? [chart({ title: `Net per day (${currency})`, labels: days.map((d) => d.date.slice(5)), values: days.map((d) => Number(d.net.amount)), kind: "bar" })]
      : []));
  }
  async function download() {
    clearErrors(form);
    const chosen = period();
    let text;
    try {
      text = await api("GET", path(chosen), { headers: { accept: "text/csv" }, text: true });
    } catch (error) {
      failed(error);
      return;
    }
    const name = `earnings-${chosen.from}-${chosen.to}.csv`;
    const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    const link = h("a", { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    say(form, `${name} is downloaded.`);
  }
  return {
    section: h("section", { id: "earnings" }, h("h2", {}, "Earnings"),
      h("p", { class: "muted" }, "What each day's paid orders brought in, less the marketplace's fees and refunds, and what was paid out to your bank (UTC days)."),
      form,
      h("div", { class: "table-wrap" }, h("table", { id: "earnings-days" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Day"), h("th", { scope: "col" }, "Orders"),
          ...EARNINGS_COLUMNS.map(([, t]) => h("th", { scope: "col", class: "amount" }, t)))),
        body, foot)),
      charts),
    load,
  };
}

// The console's pages: the path after #/vendor/, the link's words.
const PAGES = [["today", "Today"], ["vases", "Vases"], ["bouquets", "Bouquets"], ["money", "Money"], ["settings", "Settings"]];

/** The header's count of the shop's open alerts nobody acknowledged yet (its first pages of
 *  alerts, newest first: open ones and those closed in the last 30 days). */
function alertCount(vendorId) {
  const count = h("span", { id: "vendor-alert-count", class: "count alert-count", "data-count": "", hidden: true });
  const load = serially(async () => {
    const alerts = await allItems(`/vendors/${vendorId}/alerts`, 3);
    const open = alerts.filter((a) => !a.closedAt && !a.acknowledgedAt).length;
    count.dataset.count = String(open);
    count.title = `${open} open alert${open === 1 ? "" : "s"} not yet acknowledged`;
    count.replaceChildren(String(open), h("span", { class: "sr-only" }, ` open alert${open === 1 ? "" : "s"} to acknowledge`));
    count.hidden = open === 0;
  });
  return { count, load };
}

/** The header every page of the console has: its heading, the shop's public page, the pages
 *  with the current one marked, and the count of alerts beside Vases. */
function consoleHeader(vendorId, [current, title], count) {
  return h("header", { class: "console-head" },
    h("h1", {}, `Vendor console: ${title}`),
    h("p", { class: "muted console-name" }, h("a", { href: `#/shops/${vendorId}` }, "Your shop's page"),
      ": its rating and reviews as customers see them; answer reviews there."),
    h("nav", { class: "console-nav", "aria-label": "Vendor console" },
      PAGES.map(([slug, label]) => h("a", {
        href: slug === "today" ? "#/vendor" : `#/vendor/${slug}`,
        "aria-current": slug === current ? "page" : null,
        "data-console-page": slug,
      }, label, slug === "vases" ? [" ", count] : null))));
}

export async function vendorPage(sub = "today") {
  const vendorId = session.vendorId();
  if (session.role() !== "vendor" || !vendorId) {
    show(h("h1", {}, "Vendor console"), h("p", {}, h("a", { href: "#/signin" }, "Sign in as a vendor"), " to manage bouquets, vases and orders."));
    return;
  }
  const page = PAGES.find(([slug]) => slug === sub);
  if (!page) {
    location.hash = "#/vendor";
    return;
  }
  document.body.dataset.consolePage = sub;
  const badge = alertCount(vendorId);
  // Each page: its sections, what it reads (again after a reconnect), and what each event
  // of the shop's channel makes it read again.
  let sections, loads, onEvent = () => {}, stopOrders = () => {};
  if (sub === "today") {
    const orders = ordersSection();
    sections = [orders.section];
    loads = [orders.load];
    stopOrders = followOrders(() => refresh(orders.load));
  } else if (sub === "vases") {
    const alerts = alertsSection(vendorId, () => refresh(badge.load));
    const vases = vasesSection(vendorId, alerts);
    sections = [vases.section, alerts.section, vases.charts];
    loads = [vases.load, alerts.load];
    onEvent = (event) => {
      if (event.name.startsWith("Vase") || event.name === "BouquetFreshnessChanged" || event.name === "BouquetListed") refresh(vases.load);
      if (event.name.startsWith("VaseAlert")) refresh(alerts.load);
    };
  } else if (sub === "bouquets") {
    const bouquets = bouquetsSection(vendorId);
    sections = [bouquets.section];
    loads = [bouquets.load];
    // Order events move bouquets too (reserved, sold, released, back on sale).
    const MOVES_BOUQUETS = new Set(["OrderReserved", "OrderPaid", "OrderCancelled", "ReservationExpired", "OrderRejected"]);
    onEvent = (event) => {
      if (event.name.startsWith("Bouquet") || MOVES_BOUQUETS.has(event.name)) refresh(bouquets.loadBouquets);
      if (event.name === "VaseRegistered" || event.name === "VaseDecommissioned" || event.name === "BouquetListed"
        || event.name === "BouquetWithdrawn" || event.name === "BouquetPastItsBest") refresh(bouquets.loadVases);
    };
  } else if (sub === "money") {
    const payouts = payoutsSection(vendorId);
    const analytics = analyticsSection(vendorId);
    const earnings = earningsSection(vendorId);
    sections = [payouts.section, analytics.section, earnings.section];
    loads = [analytics.load, earnings.load];
    onEvent = (event) => {
      if (event.name === "OrderPaid" || event.name === "OrderFulfilled" || event.name === "OrderRejected") refresh(analytics.load);
      if (event.name === "OrderPaid" || event.name === "OrderRejected") refresh(earnings.load);
      if (event.name === "VendorPayoutsChanged") payouts.show(event.data.chargesEnabled);
    };
  } else {
    const delivery = deliverySettingsSection(vendorId);
    const rules = vaseRulesSection(vendorId);
    sections = [delivery.section, rules.section];
    loads = [delivery.load, rules.load];
    onEvent = (event) => {
      if (event.name === "VaseRulesChanged") refresh(rules.load);
    };
  }
  show(consoleHeader(vendorId, page, badge.count), ...sections);
  const all = () => Promise.all([badge.load(), ...loads.map((load) => load())]);
  await all();
  live.onReconnect.add(() => refresh(all));
  const stopVendor = live.subscribe(`vendor:${vendorId}`, (event) => {
    if (event.name.startsWith("VaseAlert")) refresh(badge.load);
    onEvent(event);
  });
  return () => { stopOrders(); stopVendor(); };
}
