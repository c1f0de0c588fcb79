// Bouquet photos: the storefront's picture (srcset of the sizes, lazy, a fixed 4:3 box so
// nothing moves when it loads) and the vendor's upload (a signed form straight to S3, then
// the photo function's answer).
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
 * Uploads `file` as the photo of bouquet `id`: resolves with what the vendor is told
 * (`{ok, text}`) once the photo function has taken or refused it.
 */
export async function uploadPhoto(id, file) {
  if (!PHOTO_TYPES.includes(file.type)) {
    return { ok: false, text: "Choose a JPEG, PNG or WebP photo." };
  }
  if (file.size > MAX_PHOTO_BYTES) {
    const mb = (file.size / 1024 / 1024).toFixed(1);
    return { ok: false, text: `The photo is ${mb} MB; photos up to 5 MB are taken.` };
  }
  const ticket = await api("POST", `/bouquets/${id}/photo-uploads`, { body: { contentType: file.type } });
  const form = new FormData();
  for (const [name, value] of Object.entries(ticket.fields)) form.append(name, value);
  form.append("file", file);
  const sent = await fetch(ticket.url, { method: "POST", body: form });
  if (!sent.ok) return { ok: false, text: s3Refusal(sent.status, await sent.text()) };
  for (let waited = 0; waited < 60_000; waited += 500) {
    const upload = await api("GET", `/bouquets/${id}/photo-uploads/${ticket.uploadId}`);
    if (upload.status === "ready") return { ok: true, text: "Photo updated." };
    if (upload.status === "rejected") {
      return { ok: false, text: `${upload.refusal.message[0].toUpperCase()}${upload.refusal.message.slice(1)}. The photo it had stays.` };
    }
    if (upload.status === "superseded") return { ok: true, text: "A photo chosen later is shown instead." };
    await sleep(500);
  }
  return { ok: false, text: "The photo is still being processed; it will show when it is ready." };
}
