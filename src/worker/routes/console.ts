/**
 * The developer console at /console: server-rendered pages over the same service functions the
 * admin REST routes call (no HTTP to itself). The session cookie's developer token is put where
 * the admin routes read theirs (`Authorization`), so `authenticateDeveloper` /
 * `authenticateProjectAdmin` check it exactly as they check an API call. Cookie, CSRF and CSP
 * decisions: src/console/session.ts and README "Console".
 */

import { type Context, Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { parseCredential } from "../../accounts/crypto.ts";
import {
  createDeveloperToken,
  listDeveloperTokens,
  revokeDeveloperToken,
} from "../../accounts/developer-tokens.ts";
import { whoami } from "../../accounts/developers.ts";
import {
  type AppMcpSettings,
  AUTH_MODES,
  connectionBase,
  readAppMcpConfig,
  setExposure,
  updateAppMcpConfig,
} from "../../app-mcp/admin.ts";
import { type AppMcpRefusal, appMcpRefusal } from "../../app-mcp/admission.ts";
import { appToolDefinitions } from "../../app-mcp/definitions.ts";
import { loadAppMeta } from "../../app-mcp/surface.ts";
import type { Scope } from "../../app-mcp/tools.ts";
import {
  type CreatedToken,
  type EventsPageData,
  eventsPage,
  grantsPage,
  type Notice,
  projectPage,
  projectsPage,
  signInPage,
  tokensPage,
} from "../../console/pages.ts";
import {
  csrfMatches,
  csrfToken,
  NON_PAGE_HEADERS,
  pageHeaders,
  SESSION_COOKIE,
  SESSION_MAX_AGE_SECONDS,
  sameOrigin,
  scriptNonce,
  secureCookie,
} from "../../console/session.ts";
import { collectionView } from "../../data/collections.ts";
import { listCollections } from "../../data/service.ts";
import { AppError, forbidden, unauthorized } from "../../errors.ts";
import { deleteEvents, listEvents } from "../../events/service.ts";
import { listFunctions } from "../../functions/service.ts";
import { grantPageInput } from "../../oauth/grant-page.ts";
import { listProjectGrants } from "../../oauth/grants.ts";
import { allClientConfigs, serverName } from "../../platform-mcp/client-configs.ts";
import { RATE_LIMIT_TIERS } from "../../rate-limit.ts";
import { billingStatus, dailyUsage } from "../../usage/billing.ts";
import { authenticateDeveloper, authenticateProjectAdmin } from "../auth.ts";
import { type AppEnv, answerAs } from "../hono.ts";
import { settleUsage } from "../metering.ts";
import { enforceDeveloperRateLimit } from "../rate-limit.ts";
import { formBody } from "../request.ts";
import { oauthHelpers, revokeProjectGrantOr404 } from "./oauth.ts";

type C = Context<AppEnv>;

export const consoleRoutes = new Hono<AppEnv>();

/**
 * Middleware for `/console/*` (which matches `/console` too), installed by the cold app outside the
 * platform's own middleware: every response under /console that is not a rendered page (errors the
 * platform's renderer writes as JSON, the body limit's 413, the path guard's 400, 404s of unknown
 * paths, redirects) gets the console's headers too. A page sets its own CSP; anything else is given
 * {@link NON_PAGE_HEADERS}.
 */
export async function consoleHeaders(c: C, next: () => Promise<void>) {
  await next();
  if (c.res.headers.has("content-security-policy")) return;
  for (const [name, value] of Object.entries(NON_PAGE_HEADERS)) c.res.headers.set(name, value);
}

/**
 * Make `token` the request's developer credential for the admin authentication functions. The
 * stand-in request has no body: read a form (`formBody`) before calling this. Anything not shaped
 * like a developer token is refused here (401), before it meets `Headers`: a cookie or form value
 * with a control character (`%0A` in a cookie decodes to one) is no header value and would throw.
 */
function useToken(c: C, token: string): void {
  if (!parseCredential("developer", token)) throw unauthorized("invalid developer token");
  const headers = new Headers(c.req.raw.headers);
  headers.set("authorization", `Bearer ${token}`);
  c.req.raw = new Request(c.req.url, { method: c.req.method, headers });
}

function render(c: C, page: (nonce: string) => ReturnType<typeof signInPage>, status = 200) {
  const nonce = scriptNonce();
  return c.html(page(nonce), status as 200, pageHeaders(nonce));
}

/** A console session: the developer, the cookie's token and that token's id. */
interface Session {
  developerId: string;
  token: string;
  tokenId: string;
}

/** The signed-in developer, or null (no cookie, or a token that no longer works: cookie cleared). */
async function signedIn(c: C): Promise<Session | null> {
  const token = getCookie(c, SESSION_COOKIE);
  if (!token) return null;
  let developerId: string;
  let tokenId: string;
  try {
    useToken(c, token);
    ({ developerId, tokenId } = await authenticateDeveloper(c));
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 401) throw err;
    deleteCookie(c, SESSION_COOKIE, { path: "/console" });
    return null;
  }
  c.set("credentialHolder", { developerId });
  answerAs(c, `developer:${developerId}`, developerId);
  // Every signed-in console request counts against the developer's control-plane rate limit.
  await enforceDeveloperRateLimit(c.env, developerId);
  return { developerId, token, tokenId };
}

/** A state-changing form: same origin, signed in, CSRF token of this session. Returns the form. */
async function checkedForm(
  c: C,
): Promise<(Session & { form: Record<string, string | File | (string | File)[]> }) | null> {
  if (!sameOrigin(c.req.header("origin"), c.req.url)) throw forbidden("cross-origin form post refused");
  const form = await formBody(c, { all: true });
  const session = await signedIn(c);
  if (!session) return null;
  if (!(await csrfMatches(session.token, form.csrf))) throw forbidden("invalid CSRF token: reload the page");
  return { ...session, form };
}

/**
 * The origins textarea as the config's `allowed_origins` list: one per line, blank lines and
 * surrounding spaces dropped; each origin is then checked by the service's schema. Undefined (field
 * absent) leaves the stored list alone.
 */
const originLines = (value: unknown): string[] | undefined =>
  typeof value === "string"
    ? value
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter(Boolean)
    : undefined;

const list = (value: unknown): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter(
    (v): v is string => typeof v === "string",
  );

consoleRoutes.get("/console", async (c) => {
  const session = await signedIn(c);
  if (!session) return render(c, (nonce) => signInPage(nonce));
  const [{ developer, projects }, csrf] = await Promise.all([
    whoami(c.var.db, session.developerId),
    csrfToken(session.token),
  ]);
  return render(c, (nonce) => projectsPage(nonce, csrf, developer?.email ?? "", projects));
});

consoleRoutes.post("/console/login", async (c) => {
  if (!sameOrigin(c.req.header("origin"), c.req.url)) throw forbidden("cross-origin form post refused");
  const form = await formBody(c);
  const token = typeof form.token === "string" ? form.token.trim() : "";
  try {
    useToken(c, token);
    await authenticateDeveloper(c);
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 401) throw err;
    return render(
      c,
      (nonce) => signInPage(nonce, { kind: "error", text: "That developer token is not valid." }),
      401,
    );
  }
  setCookie(c, SESSION_COOKIE, token, {
    path: "/console",
    httpOnly: true,
    secure: secureCookie(c.req.url),
    sameSite: "Strict",
    maxAge: SESSION_MAX_AGE_SECONDS,
  });
  return c.redirect("/console", 303);
});

consoleRoutes.post("/console/logout", async (c) => {
  await checkedForm(c);
  deleteCookie(c, SESSION_COOKIE, { path: "/console" });
  return c.redirect("/console", 303);
});

/** Render a project's page (with optional notices), reading everything through the services. */
async function showProject(c: C, token: string, notices: ProjectPageData["notices"] = {}, status = 200) {
  const { project, config } = await authenticateProjectAdmin(c, c.req.param("id") as string);
  const db = c.var.db;
  await settleUsage(db);
  const [collections, functions, meta, billing, daily, view, csrf] = await Promise.all([
    listCollections(db, project.id),
    listFunctions(db, project.id),
    loadAppMeta(db, project, config),
    billingStatus(db, project.id, undefined),
    dailyUsage(db, project.id, {}),
    readAppMcpConfig(db, connectionBase(c.env, c.req.url), project.id, config),
    csrfToken(token),
  ]);
  const target = {
    name: serverName(project.name),
    url: view.connection.url,
    headers: { Authorization: "Bearer <developer token>" },
  };
  const data: ProjectPageData = {
    project: { id: project.id, name: project.name },
    csrf,
    collections: collections.map(collectionView),
    functions,
    exposure: { collections: config.exposedCollections, functions: config.exposedFunctions },
    config: view,
    authModes: AUTH_MODES,
    rateLimitTiers: RATE_LIMIT_TIERS,
    tools: [
      {
        scope: "developer",
        label: "Developer token",
        refused: refusal(config, "developer"),
        tools: appToolDefinitions(meta, "developer"),
      },
      {
        scope: "end_user",
        label: "End user (client key + session)",
        refused: refusal(config, "end_user"),
        tools: appToolDefinitions(meta, "end_user"),
      },
    ],
    clientConfigs: allClientConfigs(target),
    usage: daily.days.map((d) => ({ day: d.day, value: d.usage.agent_tool_calls ?? 0 })),
    billing,
    notices,
  };
  return render(c, (nonce) => projectPage(nonce, data), status);
}

type ProjectPageData = Parameters<typeof projectPage>[1];

/** What the page says for each reason the app MCP refuses a scope (src/app-mcp/admission.ts). */
const REFUSALS: Record<AppMcpRefusal, string> = {
  disabled: "the endpoint is disabled",
  client_only: "auth_mode client_only refuses developer tokens",
  developer_only: "auth_mode developer_only refuses end users",
};

/** Why the app MCP refuses a scope's connections now (the rule routes/app-mcp.ts applies), or null. */
function refusal(config: AppMcpSettings, scope: Scope): string | null {
  const refused = appMcpRefusal(config, scope);
  return refused === null ? null : REFUSALS[refused];
}

consoleRoutes.get("/console/projects/:id", async (c) => {
  const session = await signedIn(c);
  if (!session) return c.redirect("/console", 303);
  return showProject(c, session.token);
});

/** Run a form's operation; an invalid input re-renders the page with the message (400). */
async function formAction(
  c: C,
  section: "exposure" | "config",
  run: (form: Record<string, unknown>) => Promise<unknown>,
) {
  const checked = await checkedForm(c);
  if (!checked) return c.redirect("/console", 303);
  try {
    await run(checked.form);
  } catch (err) {
    if (!(err instanceof AppError) || err.status === 401 || err.status === 404) throw err;
    const notice: Notice = { kind: "error", text: err.message };
    return showProject(c, checked.token, { [section]: notice }, err.status);
  }
  return c.redirect(`/console/projects/${c.req.param("id")}#${section}`, 303);
}

consoleRoutes.post("/console/projects/:id/exposure", (c) =>
  formAction(c, "exposure", async (form) => {
    const { project, config } = await authenticateProjectAdmin(c, c.req.param("id"));
    await setExposure(c.var.db, project.id, config, {
      collections: list(form.collections),
      functions: list(form.functions),
    });
  }),
);

consoleRoutes.post("/console/projects/:id/config", (c) =>
  formAction(c, "config", async (form) => {
    const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
    const slug = typeof form.slug === "string" ? form.slug.trim() : "";
    await updateAppMcpConfig(c.var.db, connectionBase(c.env, c.req.url), project.id, {
      enabled: form.enabled === "on",
      auth_mode: form.auth_mode,
      slug: slug === "" ? null : slug,
      allowed_origins: originLines(form.allowed_origins),
      // A form sends text: the service's schema checks the tier (a bad one is its 400 message).
      ...(typeof form.rate_limit_per_minute === "string"
        ? { rate_limit_per_minute: Number(form.rate_limit_per_minute) }
        : {}),
    });
  }),
);

/**
 * The project's connected apps: one page of its OAuth grants, read and paged (`?limit=`,
 * `?cursor=`) exactly as `GET /v1/admin/projects/:id/oauth/grants` reads them (a bad cursor is
 * its 400).
 */
consoleRoutes.get("/console/projects/:id/grants", async (c) => {
  const session = await signedIn(c);
  if (!session) return c.redirect("/console", 303);
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const input = grantPageInput(c.req.query("limit"), c.req.query("cursor"));
  const [page, csrf] = await Promise.all([
    listProjectGrants(c.env, oauthHelpers(c), project.id, input),
    csrfToken(session.token),
  ]);
  return render(c, (nonce) =>
    grantsPage(nonce, {
      project: { id: project.id, name: project.name },
      csrf,
      page,
      limit: input.limit,
      resumed: input.cursor !== undefined,
    }),
  );
});

/** What the events page says about a delete: its answer, or the service's refusal of the form. */
type Deletion = NonNullable<EventsPageData["deletion"]>;

/**
 * Render the project's events page: one page read exactly as `GET /v1/admin/projects/:id/events`
 * reads it (`listEvents`, `?limit=&cursor=&name=`). The name filter is a form on the page, so the
 * listing's refusal of a query (a bad name, limit or cursor) is shown there as its message (400),
 * not as the API's JSON error; so is a refused delete form (`deletion.notice`).
 */
async function showEvents(
  c: C,
  token: string,
  project: { id: string; name: string },
  query: { limit?: string; cursor?: string; name?: string },
  deletion?: Deletion,
  status = 200,
) {
  const csrf = await csrfToken(token);
  const data = {
    project: { id: project.id, name: project.name },
    csrf,
    query: { name: query.name, limit: query.limit },
    resumed: Boolean(query.cursor),
    deletion,
  };
  try {
    const page = await listEvents(c.var.db, project.id, query);
    return render(c, (nonce) => eventsPage(nonce, { ...data, ...page }), status);
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    const notice: Notice = { kind: "error", text: err.message };
    return render(c, (nonce) => eventsPage(nonce, { ...data, events: [], next_cursor: null, notice }), 400);
  }
}

/** The project's events: the listing, a name filter and the delete form. */
consoleRoutes.get("/console/projects/:id/events", async (c) => {
  const session = await signedIn(c);
  if (!session) return c.redirect("/console", 303);
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const query = { limit: c.req.query("limit"), cursor: c.req.query("cursor"), name: c.req.query("name") };
  return showEvents(c, session.token, project, query);
});

/** A date input's `YYYY-MM-DD`: that UTC day's midnight. */
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * "Delete events received before <date>": the REST delete's own `deleteEvents` (`DELETE
 * /v1/admin/projects/:id/events?before=&name=`), CSRF-checked like every console form. `before` is
 * a date (the form's date input: its UTC midnight) or an ISO-8601 date-time, taken as given. The
 * answer is the events page with what was deleted and, when `more`, a button deleting the next batch
 * with the same arguments; a refused `before` or `name` is the service's message there (400).
 */
consoleRoutes.post("/console/projects/:id/events/delete", async (c) => {
  const checked = await checkedForm(c);
  if (!checked) return c.redirect("/console", 303);
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const given = typeof checked.form.before === "string" ? checked.form.before.trim() : "";
  const before = DATE_ONLY.test(given) ? `${given}T00:00:00Z` : given;
  const name =
    typeof checked.form.name === "string" && checked.form.name.trim() ? checked.form.name.trim() : undefined;
  try {
    const result = await deleteEvents(c.var.db, project, { before, name });
    return showEvents(c, checked.token, project, {}, { before, name, result });
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    const notice: Notice = { kind: "error", text: err.message };
    return showEvents(c, checked.token, project, {}, { before: given, name, notice }, 400);
  }
});

/**
 * Revoke one of the project's grants through the REST DELETE's own path (`revokeProjectGrantOr404`:
 * recorded as revoked in the database, then deleted from the provider). An id that is not a grant of
 * this project — malformed, gone, or another developer's — is the same 404.
 */
consoleRoutes.post("/console/projects/:id/grants/:grantId/revoke", async (c) => {
  const checked = await checkedForm(c);
  if (!checked) return c.redirect("/console", 303);
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  await revokeProjectGrantOr404(c, project.id, c.req.param("grantId"));
  return c.redirect(`/console/projects/${project.id}/grants#grants`, 303);
});

/** Render the tokens page (with the just-created secret or a notice), reading through the service. */
async function showTokens(
  c: C,
  session: Session,
  opts: { created?: CreatedToken; message?: Notice } = {},
  status = 200,
) {
  const [tokens, csrf] = await Promise.all([
    listDeveloperTokens(c.var.db, session.developerId, session.tokenId),
    csrfToken(session.token),
  ]);
  return render(c, (nonce) => tokensPage(nonce, csrf, tokens, opts), status);
}

consoleRoutes.get("/console/tokens", async (c) => {
  const session = await signedIn(c);
  if (!session) return c.redirect("/console", 303);
  return showTokens(c, session);
});

/**
 * Create a token and answer with the page showing its secret — the only time it is shown (the page
 * is no-store like every console page). A refusal (bad name, quota) re-renders with the message.
 */
consoleRoutes.post("/console/tokens", async (c) => {
  const checked = await checkedForm(c);
  if (!checked) return c.redirect("/console", 303);
  const name = typeof checked.form.name === "string" ? checked.form.name.trim() : "";
  try {
    const created = await createDeveloperToken(c.var.db, checked.developerId, name ? { name } : {});
    return showTokens(c, checked, { created });
  } catch (err) {
    if (!(err instanceof AppError) || err.status === 401) throw err;
    return showTokens(c, checked, { message: { kind: "error", text: err.message } }, err.status);
  }
});

/**
 * Revoke one of the developer's tokens. Revoking the session's own token is allowed (a leaked token
 * must be able to end itself): the cookie then stops working, so the answer goes to the sign-in page.
 * The developer's last live token is not (409, shown on the page): it would lock them out for good.
 */
consoleRoutes.post("/console/tokens/:tokenId/revoke", async (c) => {
  const checked = await checkedForm(c);
  if (!checked) return c.redirect("/console", 303);
  try {
    const revoked = await revokeDeveloperToken(
      c.var.db,
      checked.developerId,
      c.req.param("tokenId"),
      checked.tokenId,
    );
    return c.redirect(revoked.current ? "/console" : "/console/tokens#tokens", 303);
  } catch (err) {
    if (!(err instanceof AppError) || err.status === 401) throw err;
    return showTokens(c, checked, { message: { kind: "error", text: err.message } }, err.status);
  }
});
