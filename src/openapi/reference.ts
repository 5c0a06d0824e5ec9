/**
 * `/docs`: the API reference, server-rendered from the OpenAPI document itself — no CDN script, so it
 * works offline and under a strict CSP. Every operation is a `<details>` with its security, parameters,
 * request and response schemas, and a small "Try it" form (progressive enhancement: a few lines of
 * inline script send the request with `fetch`; the token typed there is kept in the page only).
 */
import { html, raw } from "hono/html";
import type { OpenApiDocument } from "./document.ts";

type Json = Record<string, unknown>;

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/** Resolve `#/components/schemas/X` one level deep, for display. */
function schemaOf(doc: OpenApiDocument, content: unknown): unknown {
  const schema = (content as { schema?: Json } | undefined)?.schema;
  const ref = schema?.$ref;
  if (typeof ref !== "string") return schema;
  const name = ref.split("/").pop() as string;
  return { [name]: ((doc.components as Json).schemas as Json)[name] };
}

function operationView(doc: OpenApiDocument, path: string, method: string, op: Json) {
  const id = op.operationId as string;
  const security = (op.security as Json[]).map((req) => Object.keys(req).join(" + ")).join(" or ") || "none";
  const params = (op.parameters as Json[] | undefined) ?? [];
  const body = (op.requestBody as { content: Json } | undefined)?.content;
  const [bodyType, bodyContent] = body ? (Object.entries(body)[0] as [string, unknown]) : [];
  const responses = Object.entries(op.responses as Record<string, Json>);
  const [okStatus, ok] = responses[0] as [string, Json];
  const okContent = ok.content ? Object.values(ok.content as Json)[0] : undefined;
  return html`<details class="op" id="${id}">
  <summary><span class="method ${method}">${method.toUpperCase()}</span> <code>${path}</code> <span class="summary">${op.summary as string}</span></summary>
  ${op.description ? html`<p>${op.description as string}</p>` : ""}
  <p><b>Auth:</b> ${security}</p>
  ${params.length ? html`<table><tr><th>parameter</th><th>in</th><th>description</th></tr>${params.map((p) => html`<tr><td><code>${p.name as string}</code></td><td>${p.in as string}</td><td>${(p.description as string | undefined) ?? ""}</td></tr>`)}</table>` : ""}
  ${bodyType ? html`<p><b>Request body</b> (${bodyType})</p><pre>${pretty(schemaOf(doc, bodyContent))}</pre>` : ""}
  <p><b>${okStatus}</b> ${ok.description as string}</p>
  ${okContent ? html`<pre>${pretty(schemaOf(doc, okContent))}</pre>` : ""}
  <p class="errors"><b>Errors</b> ${responses.slice(1).map(([status]) => html`<code>${status}</code> `)} — <code>{"error": {"code", "message"}}</code></p>
  ${bodyType === "text/html" || (okContent === undefined && bodyType === undefined && ok.content && "text/html" in (ok.content as Json)) ? "" : tryIt(path, method, params, bodyType === "application/json")}
</details>`;
}

function tryIt(path: string, method: string, params: Json[], hasBody: boolean) {
  const pathParams = params.filter((p) => p.in === "path");
  return html`<form class="try" data-method="${method.toUpperCase()}" data-path="${path}">
  <b>Try it</b>
  ${pathParams.map((p) => html`<label>${p.name as string} <input name="path:${p.name as string}" required></label>`)}
  ${hasBody ? html`<label>body <textarea name="body" rows="4">{}</textarea></label>` : ""}
  <button type="submit">Send ${method.toUpperCase()}</button>
  <pre class="result" hidden></pre>
</form>`;
}

const SCRIPT = `
document.querySelectorAll("form.try").forEach((form) => form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const data = new FormData(form);
  let path = form.dataset.path;
  for (const [key, value] of data) if (key.startsWith("path:")) path = path.replace("{" + key.slice(5) + "}", encodeURIComponent(value));
  const headers = { accept: "application/json" };
  const token = document.getElementById("token").value.trim();
  const key = document.getElementById("apikey").value.trim();
  if (token) headers.authorization = "Bearer " + token;
  if (key) headers["x-api-key"] = key;
  const init = { method: form.dataset.method, headers };
  if (data.has("body")) { init.body = data.get("body"); headers["content-type"] = "application/json"; }
  const out = form.querySelector(".result");
  out.hidden = false;
  try {
    const res = await fetch(path, init);
    const text = await res.text();
    let shown = text;
    try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch {}
    out.textContent = res.status + " " + res.statusText + "\\n" + shown;
  } catch (err) { out.textContent = String(err); }
}));`;

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2230;background:#f7f8fb}
header{background:#1d2230;color:#fff;padding:16px 32px}header a{color:#9cc3ff}
main{max-width:1040px;margin:0 auto;padding:16px 32px}
h2{margin-top:32px;border-bottom:1px solid #d8dce6;text-transform:capitalize}
details.op{background:#fff;border:1px solid #d8dce6;border-radius:6px;margin:8px 0;padding:6px 12px}
summary{cursor:pointer}.summary{color:#555}
.method{display:inline-block;min-width:64px;font-weight:600;font-size:12px;text-align:center;border-radius:4px;padding:2px 6px;color:#fff}
.get{background:#2f7d4f}.post{background:#2f5fb3}.put{background:#8a5a00}.patch{background:#8a5a00}.delete{background:#b3362f}
pre{background:#f1f3f8;padding:8px;overflow:auto;font-size:13px;max-height:360px}
table{border-collapse:collapse}td,th{border:1px solid #d8dce6;padding:2px 8px;text-align:left}
form.try{border-top:1px dashed #d8dce6;margin-top:8px;padding-top:8px;display:grid;gap:6px}
textarea,input{font:13px monospace;width:100%;box-sizing:border-box}
.auth{display:grid;grid-template-columns:1fr 1fr;gap:8px;background:#fff;border:1px solid #d8dce6;padding:12px;border-radius:6px}`;

/** The reference page for `doc`; its one script carries `nonce` (the response's CSP names it). */
export function referencePage(doc: OpenApiDocument, nonce: string) {
  const info = doc.info as { title: string; version: string; description: string };
  const byTag = new Map<string, ReturnType<typeof operationView>[]>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const tag = (op.tags as string[])[0] as string;
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)?.push(operationView(doc, path, method, op));
    }
  }
  const tags = (doc.tags as { name: string; description: string }[]).filter((t) => byTag.has(t.name));
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${info.title} — API reference</title><style>${raw(STYLE)}</style></head>
<body><header><h1>${info.title} API <small>${info.version}</small></h1>
<p>OpenAPI 3.1: <a href="/openapi.json">/openapi.json</a> · <a href="/console">console</a></p></header>
<main>
<p>${info.description}</p>
<section class="auth" aria-label="credentials">
  <label>Authorization: Bearer (developer token or end-user session) <input id="token" autocomplete="off" placeholder="amba_dev_… or amba_sess_…"></label>
  <label>X-Api-Key (client key, end-user scope) <input id="apikey" autocomplete="off" placeholder="amba_ck_…"></label>
</section>
<nav><p>${tags.map((t) => html`<a href="#tag-${t.name}">${t.name}</a> · `)}</p></nav>
${tags.map((t) => html`<h2 id="tag-${t.name}">${t.name}</h2><p>${t.description}</p>${byTag.get(t.name)}`)}
</main><script nonce="${nonce}">${raw(SCRIPT)}</script></body></html>`;
}
