// Who is signed in: the bearer token (sessionStorage: gone when the tab closes) and its claims.
// People sign up and in with Cognito's API (SignUp, ConfirmSignUp, InitiateAuth), the same
// calls deployed (AWS's regional endpoint) and locally (the emulator's pool); the API takes
// the ID token. Locally the dev stack also mints demo tokens for any role (POST /local/token).

const TOKEN = "bouquet.token";

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
  /** `customer`, `vendor`, `admin`, or `null` when signed out: read as the API reads it
   * (Cognito's groups, else a minted token's role, else a customer). */
  role() {
    const claims = this.claims();
    if (!claims) return null;
    const groups = claims["cognito:groups"];
    if (groups) return groups.includes("admin") ? "admin" : groups.includes("vendor") ? "vendor" : "customer";
    return claims.role ?? "customer";
  },
  vendorId() {
    const claims = this.claims();
    return claims?.["custom:vendorId"] ?? claims?.vendorId ?? null;
  },
  user() {
    const claims = this.claims();
    return claims?.email ?? claims?.sub ?? null;
  },
  /** The signed-in user's email (Cognito ID tokens carry it), if any. */
  email() {
    return this.claims()?.email ?? null;
  },
  set(token) {
    sessionStorage.setItem(TOKEN, token);
  },
  signOut() {
    sessionStorage.removeItem(TOKEN);
  },
};

/** Local only: asks the dev stack for a token (the endpoint does not exist when deployed). The
 * demo user's verified email is the name if it is an address, else `{name}@example.com`, as a
 * confirmed sign-up's would be. */
export async function signInLocally(role, user, vendorId) {
  const email = user.includes("@") ? user : `${user}@example.com`;
  const response = await fetch("/local/token", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ role, sub: user, vendorId: vendorId || undefined, email }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message ?? `Sign-in failed (HTTP ${response.status}).`);
  session.set(body.token);
}

/** One call of Cognito's user-pool API (unauthenticated actions only). */
async function cognito(action, body) {
  const { cognito: pool } = await loadConfig();
  if (!pool) throw new Error("Sign-up is not configured here (config.json has no cognito section).");
  const response = await fetch(pool.endpoint, {
    method: "POST",
    headers: {
      "content-type": "application/x-amz-json-1.1",
      "x-amz-target": `AWSCognitoIdentityProviderService.${action}`,
    },
    body: JSON.stringify({ ClientId: pool.clientId, ...body }),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(cognitoMessage(answer));
    error.type = (answer.__type ?? "").split("#").pop();
    throw error;
  }
  return answer;
}

/** Cognito's error, in words. */
function cognitoMessage(answer) {
  const type = (answer.__type ?? "").split("#").pop();
  const words = {
    UsernameExistsException: "An account with this email already exists; sign in instead.",
    InvalidPasswordException: "The password is too weak: at least 12 characters.",
    CodeMismatchException: "That code is not the one we sent; check the email and try again.",
    ExpiredCodeException: "That code has expired; ask for a new one.",
    NotAuthorizedException: "The email or password is not right.",
    UserNotConfirmedException: "Confirm your email first: enter the code we sent.",
    UserNotFoundException: "The email or password is not right.",
    TooManyRequestsException: "Too many attempts; wait a minute and try again.",
    LimitExceededException: "Too many attempts; wait a minute and try again.",
  };
  return words[type] ?? answer.message ?? "Sign-in failed; please try again.";
}

/** Creates an account; Cognito emails a confirmation code. */
export async function signUp(email, password) {
  await cognito("SignUp", {
    Username: email,
    Password: password,
    UserAttributes: [{ Name: "email", Value: email }],
  });
}

/** Sends the confirmation code again (it expires after 24 hours). */
export async function resendCode(email) {
  await cognito("ResendConfirmationCode", { Username: email });
}

export async function confirmSignUp(email, code) {
  await cognito("ConfirmSignUp", { Username: email, ConfirmationCode: code });
}

/**
 * Signs in. Returns `null` when signed in, or `{ newPassword: (password) => ... }` when the
 * account was made by an administrator's invitation and needs a password of its own first.
 */
export async function signIn(email, password) {
  const answer = await cognito("InitiateAuth", {
    AuthFlow: "USER_PASSWORD_AUTH",
    AuthParameters: { USERNAME: email, PASSWORD: password },
  });
  if (answer.ChallengeName === "NEW_PASSWORD_REQUIRED") {
    return {
      newPassword: async (chosen) => {
        const done = await cognito("RespondToAuthChallenge", {
          ChallengeName: "NEW_PASSWORD_REQUIRED",
          Session: answer.Session,
          ChallengeResponses: { USERNAME: email, NEW_PASSWORD: chosen },
        });
        session.set(done.AuthenticationResult.IdToken);
      },
    };
  }
  if (!answer.AuthenticationResult?.IdToken) throw new Error(`Sign-in needs a step this console does not offer (${answer.ChallengeName}).`);
  session.set(answer.AuthenticationResult.IdToken);
  return null;
}
