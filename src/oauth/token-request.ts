/**
 * A token endpoint request (RFC 6749 §3.2, RFC 7009 §2.1) as this platform reads it beside the
 * provider, which reads the body itself: the form, the client it authenticates as, the code or token
 * it presents, whether anything in it is too long to look up, and the `error` of the provider's
 * answer. Pure (web-standard `Request`, `FormData` and `Response` in, data out).
 */
import { fromBase64url } from "../accounts/crypto.ts";
import { oauthIdTooLong } from "./tokens.ts";

const tokenForms = new WeakMap<Request, Promise<FormData | null>>();

/**
 * A token request's form, parsed once for the middlewares and the route that read it (a copy: the
 * provider reads the body itself); null when it is no form.
 */
export function tokenRequestForm(request: Request): Promise<FormData | null> {
  let form = tokenForms.get(request);
  if (!form) {
    form = request
      .clone()
      .formData()
      .catch(() => null);
    tokenForms.set(request, form);
  }
  return form;
}

/** The client id of an HTTP Basic client credential (RFC 6749 §2.3.1), still form-encoded; null for none. */
function basicClientId(authorization: string | undefined): string | null {
  const encoded = /^basic\s+(\S+)$/i.exec(authorization?.trim() ?? "")?.[1];
  if (!encoded) return null;
  try {
    const credentials = atob(encoded);
    return credentials.slice(0, Math.max(0, credentials.indexOf(":")));
  } catch {
    return null;
  }
}

/**
 * The unverified `iss` of a client assertion (RFC 7523 §3): without a `client_id` the provider looks
 * the client up by it before it verifies anything. Null for none.
 */
export function assertionIssuer(assertion: unknown): string | null {
  if (typeof assertion !== "string") return null;
  try {
    const claims = JSON.parse(new TextDecoder().decode(fromBase64url(assertion.split(".")[1] ?? "")));
    return typeof claims?.iss === "string" ? claims.iss : null;
  } catch {
    return null;
  }
}

/**
 * The client a token request authenticates as, if the provider accepts its credentials: the
 * client id of HTTP Basic credentials (form-decoded, RFC 6749 §2.3.1), else `client_id`, else a
 * client assertion's `iss` — the order the provider reads them in. Null for none.
 */
export function requestClientId(form: FormData | null, authorization: string | undefined): string | null {
  const basic = basicClientId(authorization);
  if (basic !== null) {
    try {
      return decodeURIComponent(basic.replaceAll("+", " "));
    } catch {
      return null;
    }
  }
  const clientId = form?.get("client_id");
  if (typeof clientId === "string" && clientId !== "") return clientId;
  return assertionIssuer(form?.get("client_assertion"));
}

/**
 * Whether a token request names a client, code or token longer than the provider can look up
 * (`oauthIdTooLong`): the client as `client_id`, Basic credentials or a client assertion's issuer.
 * Form-encoded values only shrink when decoded, so the raw Basic client id is measured as sent.
 */
export function oversizedTokenRequest(form: FormData | null, authorization: string | undefined): boolean {
  const named = ["client_id", "code", "refresh_token", "token"].map((field) => form?.get(field));
  named.push(basicClientId(authorization), assertionIssuer(form?.get("client_assertion")));
  return named.some((value) => typeof value === "string" && oauthIdTooLong(value));
}

/**
 * The code, refresh token or token to revoke a token request presents, by its grant type
 * (RFC 6749 §4.1.3 and §6, RFC 7009 §2.1); null for none.
 */
export function presentedToken(form: FormData | null): string | null {
  const grantType = form?.get("grant_type");
  const field =
    grantType === "authorization_code" ? "code" : grantType === "refresh_token" ? "refresh_token" : "token";
  const value = form?.get(field);
  return typeof value === "string" ? value : null;
}

/** The `error` of an OAuth error response (RFC 6749 §5.2), read from a copy; undefined for none. */
export async function oauthErrorCode(res: Response): Promise<unknown> {
  const body = (await res
    .clone()
    .json()
    .catch(() => null)) as { error?: unknown } | null;
  return body?.error;
}
