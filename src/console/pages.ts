/**
 * The console's pages, server-rendered with `hono/html` (interpolations are escaped): sign-in, the
 * project list, and a project's page — collections with columns and policy, exposure toggles,
 * config, connection panel, live tools preview per scope, usage — its connected apps (OAuth
 * grants), its events (and a form deleting the old ones), and the developer's own tokens.
 * Pure: data in, markup out. The inline script (copy buttons) is progressive enhancement; every
 * action is a plain form.
 */
import { html, raw } from "hono/html";
import type { CollectionView } from "../data/collections.ts";
import { type EventView, MAX_EVENTS_DELETED } from "../events/service.ts";
import type { FunctionView } from "../functions/service.ts";
import type { ToolDefinition } from "../mcp/server.ts";
import type { GrantPage, GrantView } from "../oauth/grants.ts";
import type { ClientConfig } from "../platform-mcp/client-configs.ts";
import { printableJson } from "../printable.ts";
import { type UsagePoint, usageChart } from "./chart.ts";

type Markup = ReturnType<typeof html>;

/** A flash line above the page content. */
export interface Notice {
  kind: "error" | "ok";
  text: string;
}

const STYLE = `
*{box-sizing:border-box}body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2230;background:#f7f8fb}
header{background:#1d2230;color:#fff;padding:10px 24px;display:flex;gap:16px;align-items:center}
header a{color:#cfe0ff}header form{margin-left:auto}
main{max-width:1100px;margin:0 auto;padding:16px 24px}
section{background:#fff;border:1px solid #d8dce6;border-radius:6px;padding:12px 16px;margin:12px 0}
h2{margin:0 0 8px;font-size:18px}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #e6e9f0;padding:4px 8px;text-align:left;vertical-align:top}
pre{background:#f1f3f8;padding:8px;overflow:auto;font-size:12px;white-space:pre-wrap;word-break:break-all}
.notice{padding:8px 12px;border-radius:6px}.notice.error{background:#fde8e7;color:#8a1f17}.notice.ok{background:#e5f5ea;color:#1d5a33}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:12px}.muted{color:#6b7285}
button{font:inherit;padding:4px 12px;cursor:pointer}label,textarea{display:block;margin:4px 0}
.tag{display:inline-block;background:#eef1f7;border-radius:4px;padding:0 6px;font-size:12px;margin-right:4px}
.visually-hidden{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
#usage-chart{max-width:100%;height:auto}.properties{word-break:break-all}`;

const COPY_SCRIPT = `document.querySelectorAll("button[data-copy]").forEach((b) => {
  b.hidden = false;
  b.addEventListener("click", async () => {
    const text = document.getElementById(b.dataset.copy).textContent;
    try { await navigator.clipboard.writeText(text); b.textContent = "Copied"; } catch { b.textContent = "Select and copy"; }
  });
});`;

function layout(title: string, nonce: string, body: Markup | Markup[], header: Markup | string = "") {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} — Amba console</title><style>${raw(STYLE)}</style></head>
<body><header><b>Amba console</b> <a href="/console">Projects</a> <a href="/console/tokens">Tokens</a> <a href="/docs">API reference</a>${header}</header>
<main>${body}</main><script nonce="${nonce}">${raw(COPY_SCRIPT)}</script></body></html>`;
}

const notice = (n?: Notice) =>
  n ? html`<p class="notice ${n.kind}" role="${n.kind === "error" ? "alert" : "status"}">${n.text}</p>` : "";

const signOut = (csrf: string) =>
  html`<form method="post" action="/console/logout"><input type="hidden" name="csrf" value="${csrf}"><button>Sign out</button></form>`;

/** The sign-in page: one form posting the developer token. */
export function signInPage(nonce: string, message?: Notice) {
  return layout(
    "Sign in",
    nonce,
    html`<section><h2>Sign in</h2>${notice(message)}
<form method="post" action="/console/login">
  <label>Developer token <input name="token" type="password" autocomplete="off" required size="60" placeholder="amba_dev_…"></label>
  <button type="submit">Sign in</button>
</form>
<p class="muted">The token is kept in an HttpOnly cookie for this site only (8 hours). No account yet? <code>POST /v1/developers/signup</code> or <code>npm run dev</code> prints one.</p></section>`,
  );
}

/** The project list. */
export function projectsPage(
  nonce: string,
  csrf: string,
  email: string,
  projects: { id: string; name: string; created_at: string | null }[],
) {
  return layout(
    "Projects",
    nonce,
    html`<section><h2>Projects of ${email}</h2>
<table><tr><th>name</th><th>id</th><th>created</th></tr>
${projects.map((p) => html`<tr><td><a href="/console/projects/${p.id}">${p.name}</a></td><td><code>${p.id}</code></td><td>${p.created_at ?? ""}</td></tr>`)}
</table></section>`,
    signOut(csrf),
  );
}

const csrfField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`;

/** A developer token as the tokens page lists it (the service's view: never a secret or digest). */
export interface TokenRow {
  id: string;
  name: string;
  created_at: string | null;
  revoked: boolean;
  current: boolean;
}

/** A token just created: its secret, shown on this one answer page and never again. */
export interface CreatedToken {
  id: string;
  name: string;
  token: string;
}

/**
 * The developer's tokens: a list with a revoke form per live token, a create form, and — on the
 * answer to a create — the new secret once. Revoking the session's own token signs the console out,
 * and without script there is no confirm: the warning stands before that button instead.
 */
export function tokensPage(
  nonce: string,
  csrf: string,
  tokens: TokenRow[],
  opts: { created?: CreatedToken; message?: Notice } = {},
) {
  const { created, message } = opts;
  const revokeForm = (t: TokenRow) =>
    t.revoked
      ? ""
      : html`${t.current ? html`<span class="notice error">Revoking this token signs the console out.</span> ` : ""}<form method="post" action="/console/tokens/${t.id}/revoke">${csrfField(csrf)}<button type="submit" aria-label="Revoke ${t.name}">Revoke</button></form>`;
  return layout(
    "Tokens",
    nonce,
    html`${
      created
        ? html`<section id="new-token-section"><h2>New token ${created.name}</h2>
<p class="notice ok" role="status">Copy the token now: it is shown only this once.</p>
<pre id="new-token">${created.token}</pre><button type="button" data-copy="new-token" hidden>Copy</button></section>`
        : ""
    }<section id="tokens"><h2>Developer tokens</h2>${notice(message)}
<table><tr><th>name</th><th>id</th><th>created</th><th>status</th><th></th></tr>
${tokens.map(
  (t) =>
    html`<tr data-token="${t.id}"><td>${t.name}${t.current ? html` <span class="tag">this session's token</span>` : ""}</td><td><code>${t.id}</code></td><td>${t.created_at ?? ""}</td><td>${t.revoked ? "revoked" : "live"}</td><td>${revokeForm(t)}</td></tr>`,
)}
</table></section>
<section id="create-token"><h2>Create a token</h2>
<form method="post" action="/console/tokens">${csrfField(csrf)}
<label>name <input name="name" maxlength="100" placeholder="default" autocomplete="off"></label>
<button type="submit">Create token</button></form>
<p class="muted">To rotate a leaked token: create one, switch your clients to it, revoke the old one.</p></section>`,
    signOut(csrf),
  );
}

/** Everything a project's page shows. */
export interface ProjectPageData {
  project: { id: string; name: string };
  csrf: string;
  collections: CollectionView[];
  functions: FunctionView[];
  exposure: { collections: string[]; functions: string[] };
  config: {
    enabled: boolean;
    auth_mode: string;
    slug: string | null;
    allowed_origins: string[];
    rate_limit_per_minute: number;
    connection: { url: string; hostname_url: string | null };
  };
  authModes: readonly string[];
  /** The caller rate-limit tiers an app may choose (per minute and caller). */
  rateLimitTiers: readonly number[];
  /** Per scope: the tools, and why the endpoint refuses that scope now (null: it connects). */
  tools: { scope: string; label: string; refused: string | null; tools: ToolDefinition[] }[];
  clientConfigs: ClientConfig[];
  /** Agent tool calls per UTC day, the last 30 days, oldest first. */
  usage: UsagePoint[];
  /** The current billing period's totals. */
  billing: { period: string; usage: Record<string, number> };
  notices: { exposure?: Notice; config?: Notice };
}

function collectionsSection(d: ProjectPageData) {
  return html`<section id="collections"><h2>Collections</h2>
${d.collections.length === 0 ? html`<p class="muted">No collections yet (<code>amba collections create</code>).</p>` : ""}
${d.collections.map(
  (
    c,
  ) => html`<h3>${c.name} <span class="tag">read: ${c.access.read}</span><span class="tag">write: ${c.access.write}</span></h3>
<table class="columns" data-collection="${c.name}"><tr><th>column</th><th>type</th><th>flags</th><th>description</th></tr>
${c.columns.map(
  (col) =>
    html`<tr><td><code>${col.name}</code></td><td>${col.type === "vector" ? `vector(${col.dimensions})` : col.type}</td><td>${[col.required ? "required" : "", col.unique ? "unique" : ""].filter(Boolean).join(", ")}</td><td>${col.description ?? ""}</td></tr>`,
)}</table>`,
)}
</section>`;
}

/**
 * A checkbox per collection / function, and per exposed name that does not exist yet (checked, marked
 * pending: it becomes a tool once created or deployed), so saving the form as shown keeps those too.
 */
function exposureSection(d: ProjectPageData) {
  const box = (kind: "collections" | "functions", name: string) =>
    html`<label><input type="checkbox" name="${kind}" value="${name}" ${d.exposure[kind].includes(name) ? "checked" : ""}> ${name}</label>`;
  const pendingBox = (kind: "collections" | "functions", name: string) =>
    html`<label class="pending"><input type="checkbox" name="${kind}" value="${name}" checked> ${name} <span class="tag muted">${kind === "collections" ? "not created yet" : "not deployed yet"}: no tool until it exists</span></label>`;
  const fieldset = (kind: "collections" | "functions", legend: string, existing: string[]) => {
    const known = new Set(existing);
    const pending = d.exposure[kind].filter((name) => !known.has(name));
    return html`<fieldset><legend>${legend}</legend>${existing.map((name) => box(kind, name))}${pending.map((name) => pendingBox(kind, name))}${existing.length || pending.length ? "" : html`<span class="muted">none</span>`}</fieldset>`;
  };
  return html`<section id="exposure"><h2>Exposure</h2>${notice(d.notices.exposure)}
<form method="post" action="/console/projects/${d.project.id}/exposure">${csrfField(d.csrf)}
<div class="grid">${fieldset(
    "collections",
    "Collections",
    d.collections.map((c) => c.name),
  )}
${fieldset(
  "functions",
  "Functions",
  d.functions.map((f) => f.name),
)}</div>
<button type="submit">Save exposure</button></form></section>`;
}

function configSection(d: ProjectPageData) {
  return html`<section id="config"><h2>App MCP config</h2>${notice(d.notices.config)}
<form method="post" action="/console/projects/${d.project.id}/config">${csrfField(d.csrf)}
<label><input type="checkbox" name="enabled" value="on" ${d.config.enabled ? "checked" : ""}> enabled (off: the endpoint answers 403)</label>
<label>auth_mode <select name="auth_mode">${d.authModes.map((m) => html`<option value="${m}" ${m === d.config.auth_mode ? "selected" : ""}>${m}</option>`)}</select></label>
<label>slug <input name="slug" value="${d.config.slug ?? ""}" placeholder="(none)" pattern="[a-z0-9]([a-z0-9-]*[a-z0-9])?" title="lowercase letters, digits and inner hyphens"> <span class="muted">empty releases it (no other developer can take it for 30 days)</span></label>
<label>rate_limit_per_minute <select name="rate_limit_per_minute">${d.rateLimitTiers.map((t) => html`<option value="${t}" ${t === d.config.rate_limit_per_minute ? "selected" : ""}>${t}</option>`)}</select> <span class="muted">per caller (developer or end user); over it, tool calls answer rate_limited</span></label>
<label for="allowed-origins-input">allowed_origins <span class="muted">— browser origins (web apps) allowed to call the app MCP, one per line, e.g. <code>https://app.example.com</code>; empty: none</span></label>
<textarea id="allowed-origins-input" name="allowed_origins" rows="4" cols="60" spellcheck="false" autocomplete="off" placeholder="https://app.example.com">${d.config.allowed_origins.join("\n")}</textarea>
<button type="submit">Save config</button></form>
<p>Current: <span id="current-config">enabled=${String(d.config.enabled)} auth_mode=${d.config.auth_mode} slug=${d.config.slug ?? "none"} rate_limit_per_minute=${d.config.rate_limit_per_minute}</span></p>
<p>Allowed origins: ${
    d.config.allowed_origins.length
      ? html`<span id="allowed-origins">${d.config.allowed_origins.map((o) => html`<code class="origin">${o}</code> `)}</span>`
      : html`<span id="allowed-origins" class="muted">none — browsers only from the platform's own origin; clients that send no Origin (CLIs, desktop hosts) are not affected</span>`
  }</p></section>`;
}

function connectionSection(d: ProjectPageData) {
  return html`<section id="connection"><h2>Connect an MCP client</h2>
<p>Path URL: <code id="path-url">${d.config.connection.url}</code></p>
<p>Hostname URL: ${d.config.connection.hostname_url ? html`<code id="hostname-url">${d.config.connection.hostname_url}</code>` : html`<span class="muted">set a slug to get one</span>`}</p>
<p><a id="grants-link" href="/console/projects/${d.project.id}/grants">Connected apps</a> <span class="muted">— the hosted assistants your users and you connected through OAuth, and revoking them</span></p>
<p class="muted">The configs name your token as <code>&lt;developer token&gt;</code>: the console never shows it. <code>amba mcp config --client …</code> prints them filled in.</p>
${d.clientConfigs.map(
  (
    c,
  ) => html`<details class="client-config" data-client="${c.client}"><summary>${c.label} <span class="muted">— ${c.where}</span></summary>
<pre id="config-${c.client}">${c.text}</pre><button type="button" data-copy="config-${c.client}" hidden>Copy</button>
${c.alternatives.map((a, i) => html`<p class="muted">or ${a.where}:</p><pre id="config-${c.client}-${i}">${a.text}</pre>`)}
</details>`,
)}</section>`;
}

function toolsSection(d: ProjectPageData) {
  return html`<section id="tools"><h2>Tools preview <span class="muted">(what tools/list returns now)</span></h2>
<div class="grid">${d.tools.map(
    (
      scope,
    ) => html`<div class="scope" data-scope="${scope.scope}"><h3>${scope.label} (${scope.tools.length})</h3>
${scope.tools.map(
  (t) => html`<details class="tool" data-tool="${t.name}"><summary><code>${t.name}</code></summary>
<p>${t.description ?? ""}</p><pre>${JSON.stringify(t.inputSchema, null, 2)}</pre></details>`,
)}</div>`,
  )}</div></section>`;
}

function usageSection(d: ProjectPageData) {
  return html`<section id="usage"><h2>Usage</h2>
<p>Agent tool calls per day (successful app MCP tool calls), the last ${d.usage.length} days, UTC:</p>
${usageChart(d.usage, `Agent tool calls per day, the last ${d.usage.length} days`)}
<p>Billing period <b>${d.billing.period}</b>: ${Object.entries(d.billing.usage).map(([k, v]) => html`<span class="tag" data-metric="${k}">${k}: ${v}</span>`)}</p>
</section>`;
}

/** A project's page. */
export function projectPage(nonce: string, d: ProjectPageData) {
  return layout(
    d.project.name,
    nonce,
    html`<h1>${d.project.name} <small class="muted"><code>${d.project.id}</code></small></h1>
<nav id="project-nav"><a id="events-link" href="/console/projects/${d.project.id}/events">Events</a> <span class="muted">— what your app sent (<code>POST /v1/events</code>)</span> · <a href="/console/projects/${d.project.id}/grants">Connected apps</a></nav>
${collectionsSection(d)}${exposureSection(d)}${configSection(d)}${toolsSection(d)}${connectionSection(d)}${usageSection(d)}`,
    signOut(d.csrf),
  );
}

/** What the connected-apps page shows: one page of the project's grants, as the REST listing pages them. */
export interface GrantsPageData {
  project: { id: string; name: string };
  csrf: string;
  page: GrantPage;
  /** The page size asked for (kept in the next page's link). */
  limit: number;
  /** Whether this is a later page (reached with a cursor). */
  resumed: boolean;
}

const WHO: Record<GrantView["scope"], string> = { end_user: "end user", developer: "developer" };

/**
 * A project's connected apps (OAuth grants): client, who authorized it, resource, when; a revoke
 * form per grant (CSRF-checked; without script there is no confirm: the warning stands above the
 * table instead), and a link to the next page with the listing's cursor.
 */
export function grantsPage(nonce: string, d: GrantsPageData) {
  const base = `/console/projects/${d.project.id}/grants`;
  const next = d.page.next_cursor
    ? `${base}?limit=${d.limit}&cursor=${encodeURIComponent(d.page.next_cursor)}`
    : null;
  const row = (g: GrantView) =>
    html`<tr data-grant="${g.id}"><td>${g.client_name}<br><code class="muted">${g.client_id}</code></td><td>${WHO[g.scope]}${g.email ? html`<br>${g.email}` : ""}<br><code class="muted">${g.principal_id}</code></td><td><code>${g.resource}</code></td><td>${g.created_at}</td><td>${g.expires_at ?? ""}</td><td><form method="post" action="${base}/${encodeURIComponent(g.id)}/revoke">${csrfField(d.csrf)}<button type="submit" aria-label="Revoke ${g.client_name} for ${g.email || g.principal_id}">Revoke</button></form></td></tr>`;
  return layout(
    `${d.project.name}: connected apps`,
    nonce,
    html`<h1><a href="/console/projects/${d.project.id}">${d.project.name}</a> <small class="muted"><code>${d.project.id}</code></small></h1>
<section id="grants"><h2>Connected apps <span class="muted">(OAuth grants)</span></h2>
<p class="muted">Hosted assistants connected to this app's MCP through OAuth, by its end users or by you. Revoking one: its access and refresh tokens stop working at once, and the assistant must be connected (authorized) again.</p>
${
  d.page.grants.length
    ? html`<table><tr><th>client</th><th>who</th><th>resource</th><th>created</th><th>expires</th><th></th></tr>
${d.page.grants.map(row)}
</table>`
    : html`<p class="muted">No assistant is connected${d.resumed ? " on this page" : ""}.</p>`
}
${d.resumed || next ? html`<p>${d.resumed ? html`<a id="first-page" href="${base}">First page</a> ` : ""}${next ? html`<a id="next-page" href="${next}">Next page</a>` : ""}</p>` : ""}</section>`,
    signOut(d.csrf),
  );
}

/** What the events page shows: one page of the project's events, as the REST listing pages them. */
export interface EventsPageData {
  project: { id: string; name: string };
  csrf: string;
  events: EventView[];
  next_cursor: string | null;
  /** The query as given (the filter form and the next page's link keep name and limit). */
  query: { name?: string; limit?: string };
  /** Whether this is a later page (reached with a cursor). */
  resumed: boolean;
  /** The listing's refusal of the query (a bad name, limit or cursor), shown instead of events. */
  notice?: Notice;
  /** The delete form's outcome: what it was given, and the delete's answer or its refusal. */
  deletion?: {
    before: string;
    name?: string;
    result?: { deleted: number; more: boolean; freed_bytes: number };
    notice?: Notice;
  };
}

/** Characters of an event's properties shown (as JSON); the rest is cut with "…". */
export const PROPERTIES_SHOWN = 200;

/**
 * Properties as one line of JSON a reader sees as written: what JSON leaves raw (C1, bidi controls,
 * U+2028/9) escaped too, then cut at {@link PROPERTIES_SHOWN} characters (whole code points). The
 * markup escaping is the template's.
 */
export function propertiesText(properties: Record<string, unknown>): string {
  const chars = Array.from(printableJson(JSON.stringify(properties)));
  return chars.length > PROPERTIES_SHOWN ? `${chars.slice(0, PROPERTIES_SHOWN).join("")}…` : chars.join("");
}

/**
 * A project's events, the last received first (read-only): name, when it happened (and when received,
 * when that differs: a client's own timestamp), the end user it came with,
 * its properties as (cut) JSON; a name filter (a GET form) and a link to the next page with the
 * listing's cursor. Names and properties are whatever the app's client code sent: text, escaped.
 */
/**
 * The delete form ("Delete events received before <date>", a date input: its UTC midnight, and an
 * optional name), after a delete what it answered, and while more match a button deleting the next
 * batch with the same arguments (the exact `before` the first one used).
 */
function deleteSection(base: string, d: EventsPageData) {
  const del = d.deletion;
  const result = del?.result;
  const count = (n: number) => `${n} event${n === 1 ? "" : "s"}`;
  const done = result
    ? html`<p class="notice ok" role="status" id="deleted">Deleted ${count(result.deleted)}${del?.name ? ` named ${del.name}` : ""} received before ${del?.before}.${result.more ? " More match: delete more to go on." : ""}</p>${
        result.more
          ? html`<form id="delete-more" method="post" action="${base}/delete">${csrfField(d.csrf)}<input type="hidden" name="before" value="${del?.before}">${del?.name ? html`<input type="hidden" name="name" value="${del.name}">` : ""}<button type="submit">Delete more</button></form>`
          : ""
      }`
    : "";
  const date = del?.before && /^\d{4}-\d{2}-\d{2}/.test(del.before) ? del.before.slice(0, 10) : "";
  return html`<section id="delete-events"><h2>Delete events</h2>
<p class="muted">Events count in the project's storage quota; deleting old ones is the way back under it. The oldest go first, at most ${MAX_EVENTS_DELETED} at a time, and they cannot be brought back. The date is a UTC day: events received before its midnight (UTC) are deleted. Also <code>amba events delete</code>, <code>DELETE /v1/admin/projects/:id/events?before=</code>.</p>
${notice(del?.notice)}${done}
<form method="post" action="${base}/delete">${csrfField(d.csrf)}<label>Delete events received before <input type="date" name="before" required value="${date}"></label> <label>named <input name="name" value="${del?.name ?? ""}" placeholder="(every name)" autocomplete="off" maxlength="128"></label> <button type="submit">Delete</button></form></section>`;
}

export function eventsPage(nonce: string, d: EventsPageData) {
  const base = `/console/projects/${d.project.id}/events`;
  const link = (cursor?: string) => {
    const params = new URLSearchParams();
    if (d.query.name) params.set("name", d.query.name);
    if (d.query.limit) params.set("limit", d.query.limit);
    if (cursor) params.set("cursor", cursor);
    const search = params.toString();
    return search ? `${base}?${search}` : base;
  };
  const next = d.next_cursor ? link(d.next_cursor) : null;
  const row = (e: EventView) =>
    html`<tr data-event="${e.id}"><td><code>${e.name}</code></td><td>${e.occurred_at}${e.occurred_at === e.received_at ? "" : html`<br><span class="muted">received ${e.received_at}</span>`}</td><td>${e.user_id ? html`<code>${e.user_id}</code>` : html`<span class="muted">none</span>`}</td><td><code class="properties">${propertiesText(e.properties)}</code></td></tr>`;
  const empty = d.notice
    ? ""
    : html`<p class="muted">${
        d.query.name
          ? html`No <code>${d.query.name}</code> events${d.resumed ? " on this page" : ""}.`
          : d.resumed
            ? "No events on this page."
            : html`No events yet: your app sends them with its client key, <code>POST /v1/events</code> <code>{"name": "app.opened", "properties": {…}}</code>.`
      }</p>`;
  return layout(
    `${d.project.name}: events`,
    nonce,
    html`<h1><a href="/console/projects/${d.project.id}">${d.project.name}</a> <small class="muted"><code>${d.project.id}</code></small></h1>
<section id="events"><h2>Events <span class="muted">(the last received first)</span></h2>
<p class="muted">What your app's client code sent with <code>POST /v1/events</code>. Names and properties come from whoever holds the (public) client key; properties are cut at ${PROPERTIES_SHOWN} characters here — <code>amba events list --json</code> and <code>GET /v1/admin/projects/:id/events</code> give them whole.</p>
<form method="get" action="${base}"><label>name <input name="name" value="${d.query.name ?? ""}" placeholder="(every name)" autocomplete="off" maxlength="128"></label>${d.query.limit ? html`<input type="hidden" name="limit" value="${d.query.limit}">` : ""} <button type="submit">Filter</button>${d.query.name ? html` <a href="${base}">Every name</a>` : ""}</form>
${notice(d.notice)}
${
  d.events.length
    ? html`<table><tr><th>name</th><th>happened (UTC)</th><th>user id</th><th>properties</th></tr>
${d.events.map(row)}
</table>`
    : empty
}
${d.resumed || next ? html`<p>${d.resumed ? html`<a id="first-page" href="${link()}">First page</a> ` : ""}${next ? html`<a id="next-page" href="${next}">Next page</a>` : ""}</p>` : ""}</section>
${deleteSection(base, d)}`,
    signOut(d.csrf),
  );
}
