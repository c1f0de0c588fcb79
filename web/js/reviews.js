// Verified reviews as the pages show them (a shop's page, the reviewed order's page): the stars,
// the text, when, and the shop's answer under it; the choice of stars a customer makes.
import { h } from "./ui.js";

/** How long after writing it its author may change a review (the API's 48 hours). */
export const EDIT_WINDOW_MS = 48 * 3600 * 1000;

/** The stars a customer chooses from, best first (a select: its error shows beside it). */
export const STAR_CHOICES = [["", "Choose"], ["5", "5 stars: excellent"], ["4", "4 stars: good"],
  ["3", "3 stars: fair"], ["2", "2 stars: poor"], ["1", "1 star: bad"]];

/** A day as a reader wants it under a review: the date, not the second. */
function day(timestamp) {
  return timestamp ? new Date(timestamp).toLocaleDateString(undefined, { dateStyle: "medium" }) : "–";
}

/** "★★★★☆", read out "4 out of 5 stars". */
export function starLine(stars) {
  const n = Math.max(0, Math.min(5, Number(stars) || 0));
  return h("span", { class: "stars", role: "img", "aria-label": `${n} out of 5 stars`, "data-stars": n },
    "★".repeat(n) + "☆".repeat(5 - n));
}

/** A review's stars, text (plain text: its line breaks kept) and dates, and the shop's answer. */
export function reviewBody(review) {
  const edited = review.editedAt ? `, edited ${day(review.editedAt)}` : "";
  return [
    h("p", { class: "row" }, starLine(review.stars), h("span", { class: "muted" }, `${day(review.writtenAt)}${edited}`)),
    review.text ? h("p", { class: "review-text", "data-field": "text" }, review.text) : null,
    review.answer
      ? h("div", { class: "answer", "data-answer": "" },
          h("p", { class: "muted" }, `The shop answered, ${day(review.answer.answeredAt)}:`),
          h("p", { class: "review-text", "data-field": "answer" }, review.answer.text))
      : null,
  ];
}

/** Whether its author may still change it: within 48 hours of writing it, and not hidden. */
export function editable(review, now = Date.now()) {
  const written = Date.parse(review?.writtenAt ?? "");
  return Boolean(review) && !review.hidden && Number.isFinite(written) && now < written + EDIT_WINDOW_MS;
}
