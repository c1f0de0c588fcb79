// The vendor console: bouquets, vases (live connection state and readings), orders to fulfil
// (live), delivery settings (fees and VAT too), analytics, earnings.
import { api } from "../api.js";
import { chart } from "../chart.js";
import { live } from "../live.js";
import { session } from "../session.js";
import { attempt, clearErrors, drawRows, field, freshnessBadge, h, money, notify, refresh, say, serially, show, showErrors, statusBadge, when } from "../ui.js";
import { followOrders } from "./orders.js";
import { PHOTO_TYPES, picture, uploadPhoto } from "../photo.js";

function formJson(form) {
  return Object.fromEntries([...new FormData(form)].filter(([, v]) => v !== ""));
}

function bouquetsSection(vendorId) {
  const list = h("div", { class: "grid", id: "vendor-bouquets" });
  const empty = h("p", { class: "muted" }, "Nothing listed yet.");
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
        say(form, `${data.name} is listed.`);
        await load();
      });
    },
  },
  field("Name", { name: "name", required: true }),
  field("Description", { tag: "textarea", name: "description", rows: 2 }),
  field("Price", { name: "price", required: true, inputmode: "decimal" }, "e.g. 24.50, EUR"),
  field("Vase id", { name: "vaseId" }, "optional: the vase it stands in"),
  h("p", {}, h("button", { type: "submit" }, "List bouquet")));
  return {
    section: h("section", {}, h("h2", {}, "Bouquets"), list, empty, h("h3", {}, "List a bouquet"), h("div", { id: "list-bouquet" }, form)),
    load,
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
  const price = h("input", { name: "price", id: `price-${id}`, required: true, inputmode: "decimal" });
  const fill = (b) => {
    shown = b;
    name.value = b.name;
    price.value = b.price.amount;
  };
  const edited = () => name.value !== shown.name || price.value !== shown.price.amount;
  const controls = h("div", { class: "row", style: "margin-top:8px" });
  const form = h("form", {
    novalidate: true,
    onsubmit: (e) => {
      e.preventDefault();
      attempt(async () => {
        clearErrors(form);
        try {
          latest = await api("PATCH", `/bouquets/${id}`, {
            headers: { "if-match": `"${shown.version}"` },
            body: { name: name.value, price: { amount: price.value, currency: shown.price.currency } },
          });
        } catch (error) {
          if (error.status === 412) {
            const current = await api("GET", `/bouquets/${id}`);
            latest = current;
            say(form, `Changed since you opened it: it is now "${current.name}" at ${money(current.price)}; yours is "${name.value}" at ${price.value}. Save again to keep yours, or reload it.`, "error");
            shown = { ...current, name: shown.name, price: shown.price };
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
    badges.replaceChildren(statusBadge(b.status), freshnessBadge(b.freshness, Boolean(b.vaseId)), h("span", { class: "muted" }, `v${b.version}`));
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
      } else if (b.status === "available" && (b.name !== shown.name || b.price.amount !== shown.price.amount)) {
        // The vendor is typing: keep it, and say what changed underneath.
        say(form, `Changed since you opened it: now "${b.name}" at ${money(b.price)}. Your edit is kept; saving it is refused until you choose.`, "error");
        controls.querySelector("[data-reload]").hidden = false;
      } else if (b.status !== "available") {
        say(form, `Now ${b.status.replaceAll("_", " ")}: it can no longer be changed.`, "error");
      }
    },
  };
}

function vasesSection(vendorId) {
  const body = h("tbody", {});
  const detail = h("div", { id: "vase-detail" });
  const showReadings = (vaseId) => attempt(async () => {
    const page = await api("GET", `/vases/${vaseId}/telemetry?limit=100`);
    const readings = [...page.items].sort((a, b) => a.sentAt.localeCompare(b.sentAt));
    detail.replaceChildren(h("h3", {}, `Readings of ${vaseId}`), readings.length
      ? h("div", {},
          chart({ title: "Water level %", labels: readings.map((r) => new Date(r.sentAt).toLocaleTimeString()), values: readings.map((r) => r.waterLevelPct), max: 100 }),
          chart({ title: "Temperature °C", labels: readings.map((r) => new Date(r.sentAt).toLocaleTimeString()), values: readings.map((r) => r.temperatureC) }))
      : h("p", { class: "muted" }, "No readings yet."));
  });
  const load = serially(async () => {
    const page = await api("GET", `/vendors/${vendorId}/vases?limit=100`);
    drawRows(body, page.items, (v) => v.vaseId, (v) => h("tr", { "data-vase": v.vaseId },
      h("td", {}, h("code", {}, v.vaseId)),
      h("td", {}, statusBadge(v.connection)),
      h("td", {}, when(v.lastHeartbeatAt)),
      h("td", {}, v.latestReading ? `water ${v.latestReading.waterLevelPct}%, ${v.latestReading.temperatureC} °C` : "–"),
      h("td", {}, v.bouquetId ? freshnessBadge(v.freshness) : "empty"),
      h("td", {}, h("button", { type: "button", class: "secondary", onclick: () => showReadings(v.vaseId) }, "Readings"))));
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
      h("div", { class: "table-wrap" }, h("table", {},
        h("thead", {}, h("tr", {}, ...["Vase", "Connection", "Last heartbeat", "Latest reading", "Bouquet", ""].map((t) => h("th", {}, t)))), body)),
      h("p", {}, register), credentials, detail),
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
      const back = `${location.origin}/#/vendor`;
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

export async function vendorPage() {
  const vendorId = session.vendorId();
  if (session.role() !== "vendor" || !vendorId) {
    show(h("h1", {}, "Vendor console"), h("p", {}, h("a", { href: "#/signin" }, "Sign in as a vendor"), " to manage bouquets, vases and orders."));
    return;
  }
  const bouquets = bouquetsSection(vendorId);
  const vases = vasesSection(vendorId);
  const orders = ordersSection();
  const analytics = analyticsSection(vendorId);
  const earnings = earningsSection(vendorId);
  const delivery = deliverySettingsSection(vendorId);
  const payouts = payoutsSection(vendorId);
  show(h("h1", {}, "Vendor console"),
    h("p", {}, h("a", { href: `#/shops/${vendorId}` }, "Your shop's page"), ": its rating and reviews as customers see them; answer reviews there."),
    payouts.section, orders.section, vases.section, bouquets.section, delivery.section, analytics.section, earnings.section);
  const all = () => Promise.all([orders.load(), vases.load(), bouquets.load(), delivery.load(), analytics.load(), earnings.load()]);
  await all();
  live.onReconnect.add(() => refresh(all));
  const stopOrders = followOrders(() => refresh(orders.load));
  // Order events move bouquets too (reserved, sold, released, back on sale).
  const MOVES_BOUQUETS = new Set(["OrderReserved", "OrderPaid", "OrderCancelled", "ReservationExpired", "OrderRejected"]);
  const stopVendor = live.subscribe(`vendor:${vendorId}`, (event) => {
    if (event.name.startsWith("Vase") || event.name === "BouquetFreshnessChanged") refresh(vases.load);
    if (event.name.startsWith("Bouquet") || MOVES_BOUQUETS.has(event.name)) refresh(bouquets.load);
    if (event.name === "OrderPaid" || event.name === "OrderFulfilled" || event.name === "OrderRejected") refresh(analytics.load);
    if (event.name === "OrderPaid" || event.name === "OrderRejected") refresh(earnings.load);
    if (event.name === "VendorPayoutsChanged") payouts.show(event.data.chargesEnabled);
  });
  return () => { stopOrders(); stopVendor(); };
}
