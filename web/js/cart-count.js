// The header's cart count: shown to customers, updated by whatever changes the cart.
import { api } from "./api.js";
import { session } from "./session.js";

/** Shows `cart` (or the cart as it is now, read once) in the header's count. */
export async function showCartCount(cart) {
  const badge = document.getElementById("cart-count");
  if (!badge) return;
  if (session.role() !== "customer") {
    badge.textContent = "";
    return;
  }
  const items = (cart ?? (await api("GET", "/cart"))).items.length;
  badge.textContent = items ? String(items) : "";
  badge.setAttribute("aria-label", `${items} in your cart`);
}
