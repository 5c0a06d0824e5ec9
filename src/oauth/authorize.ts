/**
 * The `/authorize` sign-in and consent decisions, apart from the page's HTTP (src/worker/routes/oauth.ts):
 * which endpoint a request names and which refusal it gets, which sign-in kinds an app offers,
 * how the client is named on the page, and the grant a sign-in completes. Pure, except
 * {@link describeConsent}, which asks the provider.
 */
import type { AuthRequest, OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { shownName } from "./pages.ts";
import { parseResource, type ResourceTarget, resourceOf } from "./resources.ts";
import type { GrantMetadata, OAuthProps } from "./server.ts";
import { oauthIdTooLong } from "./tokens.ts";

/** Why the page cannot go on: its HTTP status, and the error page's title and message. */
export interface Refusal {
  refused: true;
  status: number;
  title: string;
  message: string;
}

const refusal = (status: number, title: string, message: string): Refusal => ({
  refused: true,
  status,
  title,
  message,
});

/** Whether a decision is a {@link Refusal}. */
export const isRefusal = (value: unknown): value is Refusal =>
  typeof value === "object" && value !== null && (value as { refused?: unknown }).refused === true;

const NOT_VALID = "This sign-in request is not valid";

/**
 * The endpoint an authorization request's `resource` names and that endpoint's canonical resource,
 * or its refusal: a resource none of ours, or a `client_id` longer than any client of this server
 * (`oauthIdTooLong`), checked before the provider is asked anything.
 */
export function authorizeTarget(
  requestUrl: string,
  issuer: string,
  hostSuffix: string,
): { target: ResourceTarget; resource: string } | Refusal {
  const params = new URL(requestUrl).searchParams;
  const requested = params.get("resource");
  const target = requested ? parseResource(requested, issuer, hostSuffix) : null;
  if (!target)
    return refusal(
      400,
      "Unknown MCP endpoint",
      "This sign-in request does not name one of this server's MCP endpoints (its resource parameter). Reconnect from your assistant.",
    );
  const resource = resourceOf(target, issuer, hostSuffix);
  if (oauthIdTooLong(params.get("client_id") ?? ""))
    return refusal(400, NOT_VALID, "Its client_id is too long to be a client of this server.");
  return { target, resource };
}

/**
 * Whether a redirect URI is on one of this server's hosts: the issuer's, or the app hostnames'
 * suffix and every name under it. Registration takes any https URI, but a code sent to one of ours
 * goes to no client: the page would name a first-party host as where the browser goes back to, and
 * the code would land in a URL of ours (another sign-in page's query, kept in its transaction).
 * A loopback redirect URI is the person's own computer (RFC 8252), also under `npm run dev`, whose
 * issuer is `http://localhost:8787`. A host is compared without trailing dots: `mcp.amba.dev.` is the
 * fully qualified spelling of `mcp.amba.dev` (`URL` keeps the dot), and a browser reaches it alike.
 */
export function onOwnHost(redirectUri: string, issuer: string, hostSuffix: string): boolean {
  let host: string;
  try {
    host = new URL(redirectUri).hostname.replace(/\.+$/, "");
  } catch {
    return false;
  }
  if (host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host)) return false;
  const suffix = hostSuffix.toLowerCase();
  return (
    host === new URL(issuer).hostname || (suffix !== "" && (host === suffix || host.endsWith(`.${suffix}`)))
  );
}

/** The refusal of a redirect URI {@link onOwnHost}. */
export const OWN_HOST_REDIRECT: Refusal = refusal(
  400,
  NOT_VALID,
  "Its redirect URI is on this server. An assistant's redirect URI is the assistant's own.",
);

/** The refusal of a request the provider finds malformed (its `description` says why). */
export const invalidRequestRefusal = (description: string): Refusal => refusal(400, NOT_VALID, description);

/**
 * The refusal of a request whose client is a metadata document URL the provider could not fetch,
 * or (`redirectStatus`, src/oauth/cimd.ts `refusedRedirect`) that answered with a redirect.
 */
export const unfetchedDocumentRefusal = (redirectStatus: number | undefined): Refusal =>
  refusal(
    400,
    NOT_VALID,
    redirectStatus === undefined
      ? "The assistant's client metadata document (its client_id URL) could not be fetched."
      : `The assistant's client metadata document (its client_id URL) answered with a redirect (HTTP ${redirectStatus}), which is not followed: a client metadata document must be served at its client_id URL itself.`,
  );

/** How a sign-in names its app: by id or by hostname slug (`ProjectSelector`, src/credentials/principal.ts). */
export type AppSelector = { projectId: string } | { slug: string };

/** The app an app endpoint names, as the Worker looks it up for the page. */
export const appSelectorOf = (target: Exclude<ResourceTarget, { kind: "platform" }>): AppSelector =>
  "slug" in target ? { slug: target.slug } : { projectId: target.projectId };

/** An app as the page needs it: its id and name, and whether and how its app MCP takes connections. */
export interface SigninApp {
  project: { id: string; name: string };
  config: { enabled: boolean; authMode: string };
}

/** What the page may offer for a target: the app, and which sign-in kinds its auth mode allows. */
export interface SigninTarget {
  selector: AppSelector | null;
  projectId: string | null;
  appName: string;
  endUserAllowed: boolean;
  developerAllowed: boolean;
  notice?: string;
}

/** The platform MCP's sign-in: developers only. */
export const PLATFORM_SIGNIN: SigninTarget = {
  selector: null,
  projectId: null,
  appName: "the Amba platform",
  endUserAllowed: false,
  developerAllowed: true,
};

/**
 * What the page offers for an app endpoint (`selector`), given the app it names (`app`: null when
 * it names none): the kinds of sign-in its auth mode allows, or the refusal of an unknown app or an
 * endpoint turned off.
 */
export function appSigninTarget(selector: AppSelector, app: SigninApp | null): SigninTarget | Refusal {
  if (!app)
    return refusal(
      404,
      "No such app",
      "This MCP endpoint names no app. Check the URL you gave your assistant.",
    );
  const { project, config } = app;
  // The name its developer chose, shown to people who are not that developer: see shownName.
  const appName = shownName(project.name);
  if (!config.enabled)
    return refusal(
      403,
      "This app's MCP endpoint is turned off",
      `${appName} does not accept MCP connections right now.`,
    );
  const endUserAllowed = config.authMode !== "developer_only";
  const developerAllowed = config.authMode !== "client_only";
  return {
    selector,
    projectId: project.id,
    appName,
    endUserAllowed,
    developerAllowed,
    ...(endUserAllowed
      ? {}
      : {
          notice: `${appName} accepts only its developer on this MCP endpoint (auth mode developer_only): signing in with an app account is not available.`,
        }),
  };
}

/**
 * The client's name as the page shows it and the grant keeps it: its self-chosen name as
 * {@link shownName} makes it, followed by the one fact about the client that is not its own claim:
 * - a Client ID Metadata Document's name, by the domain that publishes it:
 *   `Claude (assistant-login.example)` — anyone can publish a document calling itself "Claude", and
 *   only its URL says whose it is (MCP security best practices: the consent page shows it);
 * - a registered client's name, by the host its redirect URI sends the person (and the code) back
 *   to: `Claude (claude.ai.sign-in.example)` — registration is open, so the name is anyone's pick.
 *   A loopback redirect URI (a desktop client's) stays on the person's computer: the name stands alone.
 * Hosts are `URL`'s ASCII (punycode) spelling, so one cannot pass for another in look-alike letters;
 * the page also names the redirect host under the forms.
 */
export function consentClientName(consent: {
  clientName: string;
  clientDomain?: string;
  redirectHost: string;
  redirectIsLoopback: boolean;
}): string {
  const name = shownName(consent.clientName);
  const from = consent.clientDomain ?? (consent.redirectIsLoopback ? undefined : consent.redirectHost);
  return from ? `${name} (${from})` : name;
}

/** What the page says about the request: the provider's description, the client named by {@link consentClientName}. */
export async function describeConsent(oauth: OAuthHelpers, authRequest: AuthRequest) {
  const consent = await oauth.describeConsent(authRequest);
  return { ...consent, clientName: consentClientName(consent) };
}

/** Who signed in on the page: an app's end user, or a developer (with the token they pasted). */
export type SignedIn =
  | { kind: "end_user"; projectId: string; user: { id: string; email: string } }
  | { kind: "developer"; projectId: string | null; developerId: string; tokenId: string };

/**
 * The grant a sign-in completes: who it acts as (its props, kept encrypted and checked live on
 * every request) and what it says about itself in the clear (its metadata, for the listings).
 */
export function authorizationGrant(
  who: SignedIn,
  clientName: string,
  resource: string,
): { props: OAuthProps; metadata: GrantMetadata } {
  if (who.kind === "end_user")
    return {
      props: { kind: "end_user", projectId: who.projectId, userId: who.user.id },
      metadata: {
        projectId: who.projectId,
        scope: "end_user",
        principalId: who.user.id,
        email: who.user.email,
        clientName,
        resource,
      },
    };
  return {
    props: {
      kind: "developer",
      projectId: who.projectId,
      developerId: who.developerId,
      tokenId: who.tokenId,
    },
    metadata: {
      projectId: who.projectId,
      scope: "developer",
      principalId: who.developerId,
      email: "",
      clientName,
      resource,
    },
  };
}
