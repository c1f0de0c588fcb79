// Sign in, or create a customer account (email + password, then the emailed code), through
// Cognito's API: deployed against the stack's user pool, locally against the emulator's.
// Locally there is also a demo sign-in that mints a token for any role.
import { confirmSignUp, loadConfig, resendCode, session, signIn, signInLocally, signUp } from "../session.js";
import { attempt, field, h, notify, show } from "../ui.js";

function signedIn() {
  notify(`Signed in as ${session.user()} (${session.role()}).`, "ok");
  window.dispatchEvent(new Event("bouquet:session"));
  location.hash = session.role() === "vendor" ? "#/vendor" : "#/";
}

function form(label, fields, submit, onSubmit) {
  const element = h("form", {
    "aria-label": label,
    onsubmit: (e) => {
      e.preventDefault();
      attempt(() => onSubmit(new FormData(element)));
    },
  }, ...fields, h("p", {}, h("button", { type: "submit" }, submit)));
  return element;
}

/** An invited vendor's first sign-in: a password of their own replaces the temporary one. */
function newPasswordForm(challenge) {
  return form("Choose a password", [
    h("p", {}, "Your account was created by the marketplace; choose your own password to finish signing in."),
    field("New password", { name: "newPassword", type: "password", required: true, minlength: 12, autocomplete: "new-password" }, "at least 12 characters"),
  ], "Set password and sign in", async (data) => {
    await challenge.newPassword(data.get("newPassword"));
    signedIn();
  });
}

/** The emailed code: after sign-up, or when someone left before entering it. */
function confirmForm(email, password) {
  const confirm = form("Confirm your email", [
    h("p", {}, `We sent a code to ${email}. Enter it to finish.`),
    field("Code", { name: "code", required: true, inputmode: "numeric", autocomplete: "one-time-code", id: "signup-code" }),
  ], "Confirm", async (data) => {
    await confirmSignUp(email, data.get("code").trim());
    await signIn(email, password);
    signedIn();
  });
  confirm.append(h("p", {}, h("button", {
    type: "button", class: "secondary",
    onclick: () => attempt(async () => {
      await resendCode(email);
      notify(`A new code is on its way to ${email}.`, "ok");
    }),
  }, "Send a new code")));
  return confirm;
}

function accountForms(area) {
  const signInForm = form("Sign in", [
    field("Email", { name: "email", type: "email", required: true, autocomplete: "username", id: "signin-email" }),
    field("Password", { name: "password", type: "password", required: true, autocomplete: "current-password", id: "signin-password" }),
  ], "Sign in", async (data) => {
    let challenge;
    try {
      challenge = await signIn(data.get("email"), data.get("password"));
    } catch (error) {
      if (error.type !== "UserNotConfirmedException") throw error;
      area.replaceChildren(confirmForm(data.get("email"), data.get("password")));
      return;
    }
    if (challenge) {
      area.replaceChildren(newPasswordForm(challenge));
      return;
    }
    signedIn();
  });
  const signUpForm = form("Create an account", [
    field("Email", { name: "email", type: "email", required: true, autocomplete: "email", id: "signup-email" }),
    field("Password", { name: "password", type: "password", required: true, minlength: 12, autocomplete: "new-password", id: "signup-password" }, "at least 12 characters"),
  ], "Create account", async (data) => {
    const email = data.get("email");
    const password = data.get("password");
    await signUp(email, password);
    const confirm = confirmForm(email, password);
    area.replaceChildren(confirm);
    confirm.querySelector("input").focus();
  });
  return [
    h("section", {}, h("h2", {}, "Sign in"), signInForm),
    h("section", {}, h("h2", {}, "New here? Create an account"),
      h("p", { class: "muted" }, "Anyone can shop with an account. Vendors: your marketplace administrator adds you to your shop."),
      signUpForm),
  ];
}

function demoForm(config) {
  const vendorField = field("Vendor id", { name: "vendorId", value: config.demoVendorId ?? "" }, "the shop you act for");
  vendorField.hidden = true;
  const demo = form("Demo sign-in", [
    field("Role", {
      tag: "select", name: "role", options: [["customer", "Customer"], ["vendor", "Vendor"], ["admin", "Administrator"]],
      // The default name follows the role (unless one was typed); the shop only for vendors.
      onchange: (e) => {
        const user = demo.elements.namedItem("user");
        if (/^(customer|vendor|admin)-demo$/.test(user.value)) user.value = `${e.target.value}-demo`;
        vendorField.hidden = e.target.value !== "vendor";
      },
    }),
    field("User", { name: "user", value: "customer-demo", required: true }, "any name; it becomes the token's subject, and name@example.com its verified email"),
    vendorField,
  ], "Sign in (demo)", async (data) => {
    await signInLocally(data.get("role"), data.get("user"), data.get("role") === "vendor" ? data.get("vendorId") : "");
    signedIn();
  });
  return demo;
}

export async function signInPage() {
  const config = await loadConfig();
  if (session.role()) {
    show(h("h1", {}, "Your account"),
      h("p", {}, `Signed in as ${session.user()} (${session.role()}).`),
      h("button", {
        type: "button", class: "secondary",
        onclick: () => { session.signOut(); window.dispatchEvent(new Event("bouquet:session")); },
      }, "Sign out"));
    return;
  }
  const area = h("div", {});
  if (config.cognito) area.replaceChildren(...accountForms(area));
  const local = config.signIn === "local"
    ? h("section", {}, h("h2", {}, "Demo sign-in (local only)"),
        h("p", { class: "muted" }, "The dev stack mints a token for the role you choose. Locally the account forms above use the emulator's user pool, which accepts any 6-digit confirmation code."),
        demoForm(config))
    : null;
  show(h("h1", {}, "Sign in"), area, local);
}
