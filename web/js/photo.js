// Photos: the storefront's picture of a bouquet (srcset of the sizes, lazy, a fixed 4:3 box so
// nothing moves when it loads) and the shop's uploads, a bouquet's photo or an order's proof of
// delivery alike (a signed form straight to S3, then the photo function's answer).
import { api } from "./api.js";
import { h } from "./ui.js";

/** Photos up to this size are taken (the upload policy's limit). */
export const MAX_PHOTO_BYTES = 5 * 1024 * 1024;
export const PHOTO_TYPES = ["image/jpeg", "image/png", "image/webp"];

/** The bouquet's photo, or an empty box of the same shape. `sizes` says how wide it shows. */
export function picture(bouquet, { sizes = "(max-width: 480px) 100vw, 240px", eager = false } = {}) {
  const photo = bouquet.photo;
  if (!photo) return h("div", { class: "photo empty", "aria-hidden": "true" });
  const smallest = photo.variants[0];
  return h("img", {
    class: "photo",
    src: smallest.path,
    srcset: photo.variants.map((v) => `${v.path} ${v.width}w`).join(", "),
    sizes,
    width: photo.width,
    height: photo.height,
    loading: eager ? "eager" : "lazy",
    decoding: "async",
    alt: `Photo of ${bouquet.name}`,
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** What S3 answered a refused form with, in words. */
function s3Refusal(status, text) {
  const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1];
  if (code === "EntityTooLarge") return "The photo is larger than 5 MB; choose a smaller one.";
  if (code === "AccessDenied" && /expired/i.test(text)) return "The upload took too long; try again.";
  return `The photo could not be sent (${code ?? `HTTP ${status}`}); try again.`;
}

/**
 * Uploads `file` to `uploads`, the API's uploads of one photo (`/bouquets/{id}/photo-uploads`,
 * `/orders/{id}/delivery-photo-uploads`: the same ticket and answers): resolves with what the
 * shop is told (`{ok, text}`: `done` once taken, `refused` after the reason it was not) when the
 * photo function has taken or refused it.
 */
export async function uploadPhoto(uploads, file, { done = "Photo updated.", refused = "The photo it had stays." } = {}) {
  if (!PHOTO_TYPES.includes(file.type)) {
    return { ok: false, text: "Choose a JPEG, PNG or WebP photo." };
  }
  if (file.size > MAX_PHOTO_BYTES) {
    const mb = (file.size / 1024 / 1024).toFixed(1);
    return { ok: false, text: `The photo is ${mb} MB; photos up to 5 MB are taken.` };
  }
  const ticket = await api("POST", uploads, { body: { contentType: file.type } });
  const form = new FormData();
  for (const [name, value] of Object.entries(ticket.fields)) form.append(name, value);
  form.append("file", file);
  const sent = await fetch(ticket.url, { method: "POST", body: form });
  if (!sent.ok) return { ok: false, text: s3Refusal(sent.status, await sent.text()) };
  for (let waited = 0; waited < 60_000; waited += 500) {
    const upload = await api("GET", `${uploads}/${ticket.uploadId}`);
    if (upload.status === "ready") return { ok: true, text: done };
    if (upload.status === "rejected") {
      const why = upload.refusal?.message ?? "the photo was refused";
      return { ok: false, text: `${why[0].toUpperCase()}${why.slice(1)}. ${refused}` };
    }
    if (upload.status === "superseded") return { ok: true, text: "A photo chosen later is shown instead." };
    await sleep(500);
  }
  return { ok: false, text: "The photo is still being processed; it will show when it is ready." };
}
