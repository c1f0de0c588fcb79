// Who is signed in: the bearer token (sessionStorage: gone when the tab closes) and its claims.
// Locally the dev stack mints tokens (POST /local/token); deployed, Cognito's hosted sign-in
// with the authorization code flow and PKCE.

const TOKEN = "bouquet.token";
const PKCE = "bouquet.pkce";

let config = null;

/** `/config.json`: written by the dev stack locally, uploaded with the console when deployed. */
export async function loadConfig() {
  if (!config) {
    const response = await fetch("/config.json", { cache: "no-store" });
    config = response.ok ? await response.json() : { signIn: "local" };
  }
  return config;
}

function base64UrlDecode(text) {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=");
  return decodeURIComponent([...atob(padded)].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join(""));
}

function base64UrlEncode(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function claimsOf(token) {
  try {
    return JSON.parse(base64UrlDecode(token.split(".")[1]));
  } catch {
    return null;
  }
}

export const session = {
  token() {
    const token = sessionStorage.getItem(TOKEN);
    const claims = token && claimsOf(token);
    if (!claims || (claims.exp && claims.exp * 1000 < Date.now())) {
      sessionStorage.removeItem(TOKEN);
      return null;
    }
    return token;
  },
  claims() {
    const token = this.token();
    return token ? claimsOf(token) : null;
  },
  /** `customer`, `vendor`, `admin`, or `null` when signed out. */
  role() {
    const claims = this.claims();
    return claims?.role ?? claims?.["custom:role"] ?? null;
  },
  vendorId() {
    const claims = this.claims();
    return claims?.vendorId ?? claims?.["custom:vendorId"] ?? null;
  },
  user() {
    const claims = this.claims();
    return claims?.email ?? claims?.sub ?? null;
  },
  set(token) {
    sessionStorage.setItem(TOKEN, token);
  },
  signOut() {
    sessionStorage.removeItem(TOKEN);
  },
};

/** Local only: asks the dev stack for a token (the endpoint does not exist when deployed). */
export async function signInLocally(role, user, vendorId) {
  const response = await fetch("/local/token", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ role, sub: user, vendorId: vendorId || undefined }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message ?? `Sign-in failed (HTTP ${response.status}).`);
  session.set(body.token);
}

/** Deployed: to Cognito's hosted sign-in, with a PKCE verifier kept for the way back. */
export async function startHostedSignIn() {
  const { cognito } = await loadConfig();
  const verifier = base64UrlEncode(crypto.getRandomValues(new Uint8Array(48)));
  const state = base64UrlEncode(crypto.getRandomValues(new Uint8Array(16)));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state }));
  const query = new URLSearchParams({
    response_type: "code",
    client_id: cognito.clientId,
    redirect_uri: cognito.redirectUri,
    scope: "openid email",
    state,
    code_challenge_method: "S256",
    code_challenge: base64UrlEncode(digest),
  });
  location.assign(`https://${cognito.domain}/oauth2/authorize?${query}`);
}

/** Deployed: back from the hosted sign-in with `?code=&state=`, trades the code for tokens. */
export async function completeHostedSignIn() {
  const params = new URLSearchParams(location.search);
  if (!params.has("code")) return false;
  const { cognito } = await loadConfig();
  const saved = JSON.parse(sessionStorage.getItem(PKCE) ?? "null");
  sessionStorage.removeItem(PKCE);
  history.replaceState(null, "", location.pathname + location.hash);
  if (!saved || saved.state !== params.get("state")) throw new Error("The sign-in could not be completed (its state did not match); please sign in again.");
  const response = await fetch(`https://${cognito.domain}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: cognito.clientId,
      code: params.get("code"),
      redirect_uri: cognito.redirectUri,
      code_verifier: saved.verifier,
    }),
  });
  if (!response.ok) throw new Error("The sign-in could not be completed; please sign in again.");
  session.set((await response.json()).id_token);
  return true;
}
