/**
 * Red team of the developer console, as someone who writes the strings it renders (names,
 * descriptions, input schemas, form input echoed in messages) or who gets a developer's browser to
 * load or post to it. One signed-in developer whose project holds hostile strings serves every case.
 * One regression test per hole found (each failed before its fix), and tests of what held that
 * config-form.test.ts and web-red.test.ts do not already prove.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { api, apiJson, signupDeveloper, type TestDeveloper } from "../helpers.ts";
import { consoleLogin, csrfOf } from "./console-session.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };
/** Markup that would run script if any field reached the page unescaped. */
const HOSTILE = `</title></script><script>alert(1)</script><img src=x onerror=alert(2)>"'`;

let dev: TestDeveloper;
let cookie: string;
let csrf: string;

const projectPath = () => `/console/projects/${dev.projectId}`;
const admin = (path: string) => `/v1/admin/projects/${dev.projectId}${path}`;

beforeAll(async () => {
  dev = await signupDeveloper();
  const created = [
    await apiJson(admin(""), {
      method: "PATCH",
      token: dev.token,
      json: { name: HOSTILE },
    }),
    await apiJson(admin("/collections"), {
      token: dev.token,
      json: { name: "notes", columns: [{ name: "body", type: "text", description: HOSTILE }] },
    }),
    await apiJson(admin("/functions/deploy"), {
      token: dev.token,
      json: {
        name: "lookup",
        url: "https://fn.example.com/lookup",
        mcp: {
          description: HOSTILE,
          input_schema: { type: "object", properties: { q: { type: "string", description: HOSTILE } } },
        },
      },
    }),
    await apiJson(admin("/app-mcp/exposure"), {
      method: "PUT",
      token: dev.token,
      json: { collections: ["notes"], functions: ["lookup"] },
    }),
  ];
  for (const res of created) expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  ({ cookie } = await consoleLogin(dev.token));
  csrf = csrfOf(await (await api(projectPath(), { headers: { cookie } })).text());
  expect(csrf).toBeTruthy();
});

/** POST a console form as a browser of the console's own origin would. */
const post = (path: string, fields: Record<string, string>) =>
  api(path, {
    method: "POST",
    redirect: "manual",
    headers: { ...FORM, cookie },
    body: new URLSearchParams(fields).toString(),
  });

describe("console red team", () => {
  it("held: tenant strings in every rendered field, and input echoed in messages, stay text", async () => {
    const pages = [
      await api("/console", { headers: { cookie } }),
      await api(projectPath(), { headers: { cookie } }),
      // The slug and an origin are echoed back in the form and its error message.
      await post(`${projectPath()}/config`, {
        csrf,
        auth_mode: "all",
        enabled: "on",
        slug: HOSTILE,
        allowed_origins: HOSTILE,
      }),
    ];
    for (const res of pages) {
      const page = await res.text();
      const nonce = /script-src 'nonce-([^']+)'/.exec(res.headers.get("content-security-policy") ?? "")?.[1];
      // The page's one script is its own, carrying this response's nonce; no injected tag survives.
      expect(page.match(/<script/g)).toEqual(["<script"]);
      expect(page).toContain(`<script nonce="${nonce}">`);
      expect(page).not.toMatch(/<img|<\/title><\/script>/);
      expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    }
  });

  it("sends every console error (404, 403, 400, 413) with the pages' no-framing, no-sniffing, no-store headers", async () => {
    const intruder = await signupDeveloper();
    const responses = {
      "unknown page": await api("/console/nope%3Cscript%3E", { headers: { cookie } }),
      "another developer's project": await api(`/console/projects/${intruder.projectId}`, {
        headers: { cookie },
      }),
      "post without CSRF token": await post(`${projectPath()}/exposure`, {}),
      "form that does not parse": await api(`${projectPath()}/exposure`, {
        method: "POST",
        headers: { cookie, "content-type": "multipart/form-data" },
        body: "x",
      }),
      "path the guard refuses": await api("/console/projects/a%00b", { headers: { cookie } }),
      "body over the limit": await api("/console/login", {
        method: "POST",
        headers: FORM,
        body: `token=${"x".repeat(1024 * 1024 + 1)}`,
      }),
      "sign-in from another origin": await api("/console/login", {
        method: "POST",
        headers: { ...FORM, origin: "https://evil.example" },
        body: new URLSearchParams({ token: dev.token }).toString(),
      }),
    };
    for (const [what, res] of Object.entries(responses)) {
      expect(res.status, what).toBeGreaterThanOrEqual(400);
      expect(res.headers.get("x-frame-options"), what).toBe("DENY");
      expect(res.headers.get("x-content-type-options"), what).toBe("nosniff");
      expect(res.headers.get("cache-control"), what).toBe("no-store");
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp, what).toContain("default-src 'none'");
      expect(csp, what).toContain("frame-ancestors 'none'");
    }
  });

  it("runs only its own script on /docs, the console-linked page that takes a developer token", async () => {
    const res = await api("/docs");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    const scriptSrc = /script-src ([^;]+)/.exec(csp)?.[1] ?? "";
    expect(scriptSrc).not.toContain("unsafe-inline");
    const nonce = /^'nonce-([^']+)'$/.exec(scriptSrc)?.[1];
    expect(nonce).toBeTruthy();
    const page = await res.text();
    expect(page.match(/<script[^>]*>/g)).toEqual([`<script nonce="${nonce}">`]);
    // Another response, another nonce.
    expect((await api("/docs")).headers.get("content-security-policy")).not.toContain(nonce);
  });

  it("held: the session cookie's flags, CSRF on every form (sign-out too), no sign-out by GET", async () => {
    const { res: login } = await consoleLogin(dev.token);
    const flags = (login.headers.get("set-cookie") ?? "").split(/;\s*/).slice(1);
    expect(flags.sort()).toEqual(["HttpOnly", "Max-Age=28800", "Path=/console", "SameSite=Strict", "Secure"]);

    const exposure = async () =>
      (await apiJson(admin("/app-mcp/exposure"), { token: dev.token })).body as Record<string, string[]>;
    const before = await exposure();
    const forged: Record<string, string>[] = [
      {},
      { csrf: "" },
      { csrf: `${csrf}x` },
      { csrf: csrf.toUpperCase() },
    ];
    for (const form of forged) {
      for (const path of ["/console/logout", `${projectPath()}/exposure`, `${projectPath()}/config`]) {
        const res = await post(path, { ...form, collections: "notes" });
        expect(res.status, `${path} ${JSON.stringify(form)}`).toBe(403);
        expect(res.headers.get("set-cookie"), path).toBeNull();
      }
    }
    expect(await exposure()).toEqual(before);
    expect((await api("/console/logout", { headers: { cookie } })).status).toBe(404);
    expect((await api(projectPath(), { headers: { cookie } })).status).toBe(200);
  });

  it("has every HTML page of the console's origin require Trusted Types and HTTPS (HSTS)", async () => {
    const pages = {
      "sign-in": await api("/console"),
      projects: await api("/console", { headers: { cookie } }),
      project: await api(projectPath(), { headers: { cookie } }),
      docs: await api("/docs"),
    };
    for (const [what, res] of Object.entries(pages)) {
      const page = await res.text();
      expect(page, what).toContain("<script nonce=");
      expect(page, what).not.toContain(dev.token);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp, what).toContain("require-trusted-types-for 'script'");
      expect(csp, what).toContain("trusted-types 'none'");
      // A network attacker cannot strip TLS from a later visit and read the token typed into the form.
      expect(res.headers.get("strict-transport-security"), what).toBe("max-age=31536000");
    }
  });
});
