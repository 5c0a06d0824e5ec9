/**
 * The OAuth sign-in pages, server-rendered with Hono's `html` helper (every interpolation is
 * escaped; client names are self-asserted, so they are shown as text only). Plain forms: no script,
 * labelled fields, one `<main>`, errors in a `role="alert"` region.
 */
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { printable } from "../printable.ts";

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}
main{max-width:30rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:.5rem;box-shadow:0 1px 3px #0002}
h1{font-size:1.4rem;margin-top:0}h2{font-size:1.1rem;margin-top:2rem}
label{display:block;margin-top:1rem;font-weight:600}
input[type=email],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;margin-top:.25rem}
.actions{margin-top:1.5rem;display:flex;gap:.75rem}
button{font:inherit;padding:.5rem 1rem;border-radius:.25rem;border:1px solid #555;background:#fff;cursor:pointer}
button[value=allow]{background:#1a56db;border-color:#1a56db;color:#fff}
button:focus-visible,input:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
[role=alert]{background:#fdecea;border:1px solid #d93025;padding:.75rem;border-radius:.25rem}
.notice{background:#fff8e1;border:1px solid #c69500;padding:.75rem;border-radius:.25rem}
.small{color:#555;font-size:.9rem}`;

function layout(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${STYLE}</style>
</head>
<body><main>${body}</main></body>
</html>`;
}

/**
 * The most characters of a name the page shows: a client's name is whatever its registrant (or its
 * metadata document) chose, up to the 8 KiB a registration may hold, and a long one could push the
 * page's own words — where the browser goes back to — out of view. Project names are at most 100.
 */
const MAX_SHOWN_NAME = 100;

/**
 * A name chosen by others (a client's, an app's) as the consent page shows it and a grant keeps
 * it: control and bidi characters as their visible escapes (`printable`: U+202E would reorder the
 * sentence around it, so "Connect X to Y" could read as something else), at most
 * {@link MAX_SHOWN_NAME} characters, then `…`. Pure.
 */
export function shownName(name: string): string {
  const chars = Array.from(printable(name.trim()));
  return chars.length > MAX_SHOWN_NAME ? `${chars.slice(0, MAX_SHOWN_NAME - 1).join("")}…` : chars.join("");
}

/** What the authorize page offers for one request. */
export interface AuthorizePageModel {
  /** The client's name, as {@link shownName} makes it. */
  clientName: string;
  /** The app's name (as {@link shownName} makes it), or "the Amba platform". */
  appName: string;
  platform: boolean;
  /** Where the browser goes back to after Allow (the redirect URI's host). */
  redirectHost: string;
  /** The form transaction (also in the `amba_oauth_tx` cookie). */
  tx: string;
  endUserAllowed: boolean;
  developerAllowed: boolean;
  /** Why a sign-in kind is not offered (auth mode), shown as a notice. */
  notice?: string;
  /** The last attempt's error. */
  error?: string;
  email?: string;
}

const decide = (label: string) => html`<div class="actions">
  <button type="submit" name="action" value="allow">${label}</button>
  <button type="submit" name="action" value="deny" formnovalidate>Deny</button>
</div>`;

/** Sign in (end user and/or developer) and consent, in one page. */
export function authorizePage(m: AuthorizePageModel): Html {
  const endUser = m.endUserAllowed
    ? html`<form method="post" action="/authorize" aria-labelledby="enduser-title">
  <h2 id="enduser-title">Sign in with your ${m.appName} account</h2>
  <p><strong>${m.clientName}</strong> wants to act as you in <strong>${m.appName}</strong>: read and write what you can.</p>
  <input type="hidden" name="tx" value="${m.tx}">
  <input type="hidden" name="mode" value="end_user">
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${m.email ?? ""}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  ${decide("Sign in and allow")}
</form>`
    : "";
  const developer = m.developerAllowed
    ? html`<form method="post" action="/authorize" aria-labelledby="developer-title">
  <h2 id="developer-title">${m.platform ? "Sign in as a developer" : `Developer of ${m.appName}?`}</h2>
  <p><strong>${m.clientName}</strong> wants to act as you, ${m.platform ? "an Amba developer: manage your projects, collections and functions" : `the developer of ${m.appName}: every row of every exposed collection`}.</p>
  <input type="hidden" name="tx" value="${m.tx}">
  <input type="hidden" name="mode" value="developer">
  <label for="developer_token">Developer token</label>
  <input id="developer_token" name="developer_token" type="password" autocomplete="off" required aria-describedby="developer-token-help">
  <p id="developer-token-help" class="small">Your <code>amba_dev_…</code> token, pasted once: the assistant gets its own short-lived tokens, never this one. Revoking this token ends the authorization.</p>
  ${decide("Sign in and allow")}
</form>`
    : "";
  return layout(
    `Connect ${m.clientName} to ${m.appName}`,
    html`<h1>Connect ${m.clientName} to ${m.appName}</h1>
${m.error ? html`<p role="alert">${m.error}</p>` : ""}
${m.notice ? html`<p class="notice">${m.notice}</p>` : ""}
${endUser}${developer}
<p class="small">After you allow, your browser goes back to <strong>${m.redirectHost}</strong>.</p>`,
  );
}

/** A page that explains why the request cannot go on (nothing is sent back to the client). */
export function errorPage(title: string, message: string): Html {
  return layout(title, html`<h1>${title}</h1><p role="alert">${message}</p>`);
}
