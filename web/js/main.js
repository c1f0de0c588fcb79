// The console's entry: a hash router over the pages, the navigation for the signed-in role.
import { loadConfig, session } from "./session.js";
import { live } from "./live.js";
import { notify } from "./ui.js";
import { showCartCount } from "./cart-count.js";
import { catalogue } from "./pages/catalogue.js";
import { bouquetPage } from "./pages/bouquet.js";
import { cartPage } from "./pages/cart.js";
import { orderPage, ordersPage } from "./pages/orders.js";
import { vendorPage } from "./pages/vendor.js";
import { signInPage } from "./pages/signin.js";
import { adminPage } from "./pages/admin.js";
import { shopPage } from "./pages/shop.js";

const ROUTES = [
  [/^#?\/?$/, catalogue],
  [/^#\/bouquets\/([^/]+)$/, bouquetPage],
  [/^#\/shops\/([^/]+)$/, shopPage],
  [/^#\/cart$/, cartPage],
  [/^#\/orders$/, ordersPage],
  [/^#\/orders\/([^/]+)$/, orderPage],
  [/^#\/vendor$/, vendorPage],
  [/^#\/signin$/, signInPage],
  [/^#\/admin$/, adminPage],
];

let leave = null;

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
        leave = (await page(...match.slice(1).map(decodeURIComponent))) ?? null;
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
