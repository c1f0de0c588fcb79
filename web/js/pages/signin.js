// Sign-in: locally a token from the dev stack for a chosen role and user; deployed, Cognito's
// hosted sign-in (authorization code + PKCE).
import { loadConfig, session, signInLocally, startHostedSignIn } from "../session.js";
import { attempt, field, h, notify, show } from "../ui.js";

export async function signInPage() {
  const config = await loadConfig();
  const signedIn = session.role()
    ? h("div", {},
        h("p", {}, `Signed in as ${session.user()} (${session.role()}).`),
        h("button", {
          type: "button", class: "secondary",
          onclick: () => { session.signOut(); window.dispatchEvent(new Event("bouquet:session")); },
        }, "Sign out"))
    : null;
  if (config.signIn === "cognito") {
    show(h("h1", {}, "Sign in"), signedIn ?? h("div", {},
      h("p", {}, "Customers sign up with their email address; vendors use the account their marketplace administrator set up."),
      h("button", { type: "button", onclick: () => attempt(startHostedSignIn) }, "Sign in or sign up")));
    return;
  }
  const form = h("form", {
    onsubmit: (e) => {
      e.preventDefault();
      const data = new FormData(form);
      attempt(async () => {
        await signInLocally(data.get("role"), data.get("user"), data.get("role") === "vendor" ? data.get("vendorId") : "");
        notify(`Signed in as ${session.user()} (${session.role()}).`, "ok");
        window.dispatchEvent(new Event("bouquet:session"));
        location.hash = session.role() === "vendor" ? "#/vendor" : "#/";
      });
    },
  },
  field("Role", { tag: "select", name: "role", options: [["customer", "Customer"], ["vendor", "Vendor"], ["admin", "Administrator"]] }),
  field("User", { name: "user", value: "customer-demo", required: true, autocomplete: "username" }, "any name; it becomes the token's subject"),
  field("Vendor id", { name: "vendorId", value: config.demoVendorId ?? "" }, "vendors only"),
  h("p", {}, h("button", { type: "submit" }, "Sign in")));
  show(h("h1", {}, "Sign in (local)"),
    h("p", { class: "muted" }, "The dev stack mints a token for the role you choose. Deployed, this page is Cognito's sign-in."),
    signedIn, form);
}
