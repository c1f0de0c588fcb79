// Where and when the customer wants flowers delivered: asked once on the storefront, kept in
// this browser (localStorage), sent with every catalogue read and prefilled at checkout.
const KEY = "bouquet.place";

/** Tomorrow in the browser's own calendar, as YYYY-MM-DD. */
export function tomorrow() {
  const d = new Date();
  d.setDate(d.getDate() + 1);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
}

function read() {
  try {
    return JSON.parse(localStorage.getItem(KEY) ?? "null");
  } catch {
    return null;
  }
}

export const place = {
  /** `{postcode, country, date}`, or null (never chosen, or cleared to browse everything). */
  get() {
    const stored = read();
    return stored?.postcode && stored.country && stored.date ? { postcode: stored.postcode, country: stored.country, date: stored.date } : null;
  },
  /** Whether the customer was asked already (a choice made, or cleared to browse everything). */
  asked() {
    return read() !== null;
  },
  set({ postcode, country, date }) {
    localStorage.setItem(KEY, JSON.stringify({ postcode, country: country.toUpperCase(), date }));
  },
  /** Browse everything: no place, and not asked again. */
  clear() {
    localStorage.setItem(KEY, JSON.stringify({ cleared: true }));
  },
  /** What is stored, to put back with `restore` (a refused choice); null for nothing. */
  remembered() {
    return read();
  },
  restore(stored) {
    if (stored) localStorage.setItem(KEY, JSON.stringify(stored));
    else localStorage.removeItem(KEY);
  },
  /** The catalogue's query parameters for it ("" without one). */
  query() {
    const p = this.get();
    return p ? `&postcode=${encodeURIComponent(p.postcode)}&country=${encodeURIComponent(p.country)}&date=${encodeURIComponent(p.date)}` : "";
  },
};
