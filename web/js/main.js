// The console's entry: a hash router over the pages, the navigation for the signed-in role.
import { loadConfig, session } from "./session.js";
import { live } from "./live.js";
import { notify } from "./ui.js";
import { showCartCount } from "./cart-count.js";
import { catalogue } from "./pages/catalogue.js";

/** A page of module `load()`'s export `name`, fetched when first opened: the storefront's first
 *  load carries only its own modules. */
const later = (name, load) => ({ name, load: async () => (await load())[name] });

const ROUTES = [
  [/^#?\/?$/, { name: catalogue.name, load: async () => catalogue }],
  [/^#\/bouquets\/([^/]+)$/, later("bouquetPage", () => import("./pages/bouquet.js"))],
  [/^#\/shops\/([^/]+)$/, later("shopPage", () => import("./pages/shop.js"))],
  [/^#\/cart$/, later("cartPage", () => import("./pages/cart.js"))],
  [/^#\/orders$/, later("ordersPage", () => import("./pages/orders.js"))],
  [/^#\/orders\/([^/]+)$/, later("orderPage", () => import("./pages/orders.js"))],
  // The vendor console's pages: #/vendor (today's deliveries), #/vendor/vases, ...
  [/^#\/vendor$/, later("vendorPage", () => import("./pages/vendor.js"))],
  [/^#\/vendor\/([a-z]+)$/, later("vendorPage", () => import("./pages/vendor.js"))],
  [/^#\/signin$/, later("signInPage", () => import("./pages/signin.js"))],
  [/^#\/admin$/, later("adminPage", () => import("./pages/admin.js"))],
];

let leave = null;
// Which navigation is the latest: one whose page module arrives after a later navigation began
// is dropped, so a slow import never draws over the page the person went on to.
let navigations = 0;

function navigation() {
  const role = session.role();
  for (const link of document.querySelectorAll("nav [data-role]")) {
    link.hidden = link.dataset.role !== role;
  }
  const link = document.getElementById("session-link");
  link.textContent = role ? `Signed in as ${session.user()} (${role})` : "Sign in";
  document.body.dataset.role = role ?? "anonymous";
  showCartCount().catch(() => {});
}

async function route() {
  const mine = ++navigations;
  navigation();
  if (leave) leave();
  leave = null;
  live.reset();
  const hash = location.hash || "#/";
  for (const [pattern, page] of ROUTES) {
    const match = hash.match(pattern);
    if (match) {
      document.body.dataset.page = page.name;
      document.body.dataset.ready = "no";
      try {
        const open = await page.load();
        if (mine !== navigations) return;
        const stop = (await open(...match.slice(1).map(decodeURIComponent))) ?? null;
        // A page that finished opening after the person went on (a sign-in's own redirect
        // overtaken by a link) stops following what it subscribed to; the newer page is
        // the one that says it is ready.
        if (mine !== navigations) {
          stop?.();
          return;
        }
        leave = stop;
      } catch (error) {
        notify(error.message ?? String(error));
      }
      document.body.dataset.ready = "yes";
      return;
    }
  }
  location.hash = "#/";
}

window.addEventListener("hashchange", route);
window.addEventListener("bouquet:session", () => {
  live.restart();
  route();
});

(async () => {
  try {
    await loadConfig();
  } catch (error) {
    notify(error.message);
  }
  route();
})();
