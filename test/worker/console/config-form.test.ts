/**
 * The console's app-MCP config form in workerd: the `allowed_origins` textarea (one origin per line)
 * posted like a browser posts it, through the session cookie and the page's CSRF token. Invalid
 * origins come back as the service's own message on the page (400) and nothing is stored.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { api, apiJson, signupDeveloper, type TestDeveloper } from "../helpers.ts";
import { consoleLogin, csrfOf, postForm } from "./console-session.ts";

let dev: TestDeveloper;
let cookie: string;
let csrf: string;

const projectPath = () => `/console/projects/${dev.projectId}`;
const storedOrigins = async () =>
  (await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, { token: dev.token })).body
    .allowed_origins;

/** POST the config form (`application/x-www-form-urlencoded`, as a browser sends it). */
function postConfig(fields: Record<string, string>, headers: Record<string, string> = {}) {
  return postForm(`${projectPath()}/config`, cookie, fields, headers);
}

const validForm = (allowed_origins: string) => ({ csrf, auth_mode: "all", enabled: "on", allowed_origins });

beforeAll(async () => {
  dev = await signupDeveloper();
  const login = await consoleLogin(dev.token);
  expect(login.res.status).toBe(303);
  cookie = login.cookie;
  expect(cookie).toMatch(/^amba_console=amba_dev_/);
  csrf = csrfOf(await (await api(projectPath(), { headers: { cookie } })).text());
  expect(csrf).toBeTruthy();
});

describe("console: allowed_origins", () => {
  it("shows the stored list in the textarea and as the current value", async () => {
    await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, {
      method: "PATCH",
      token: dev.token,
      json: { allowed_origins: ["https://shown.example.com", "http://localhost:5173"] },
    });
    const page = await (await api(projectPath(), { headers: { cookie } })).text();
    expect(page).toMatch(
      /<textarea[^>]*name="allowed_origins"[^>]*>https:\/\/shown\.example\.com\nhttp:\/\/localhost:5173<\/textarea>/,
    );
    expect(page).toContain('<code class="origin">https://shown.example.com</code>');
  });

  it("replaces the list with the textarea's lines (blank lines and spaces dropped, duplicates once)", async () => {
    const res = await postConfig(
      validForm(" https://app.example.com \r\n\r\nhttp://localhost:5173\r\nhttps://app.example.com\r\n"),
    );
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`${projectPath()}#config`);
    expect(await storedOrigins()).toEqual(["https://app.example.com", "http://localhost:5173"]);

    // The endpoint now serves that origin (CORS), and still refuses others.
    const ping = (origin: string) =>
      api(`/app/${dev.projectId}/mcp`, {
        method: "POST",
        token: dev.token,
        headers: { origin, accept: "application/json, text/event-stream" },
        json: { jsonrpc: "2.0", id: 1, method: "ping" },
      });
    const allowed = await ping("https://app.example.com");
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect((await ping("https://evil.example")).status).toBe(403);

    expect((await postConfig(validForm(""))).status).toBe(303);
    expect(await storedOrigins()).toEqual([]);
  });

  it("shows the service's message for a bad origin and stores nothing", async () => {
    expect((await postConfig(validForm("https://kept.example.com"))).status).toBe(303);
    for (const [bad, path] of [
      ["https://app.example.com/path", "allowed_origins.0"],
      ["https://ok.example.com\nHTTPS://Shout.example.com", "allowed_origins.1"],
      ["app.example.com", "allowed_origins.0"],
    ] as const) {
      const res = await postConfig(validForm(bad));
      expect(res.status, bad).toBe(400);
      const page = await res.text();
      expect(page).toContain(
        `<p class="notice error" role="alert">${path}: must be an exact origin: http(s)://host[:port] in lowercase, without path, query or trailing slash</p>`,
      );
    }
    const tooMany = Array.from({ length: 21 }, (_, i) => `https://a${i}.example.com`).join("\n");
    const res = await postConfig(validForm(tooMany));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("allowed_origins: at most 20 origins");
    expect(await storedOrigins()).toEqual(["https://kept.example.com"]);
  });

  it("refuses a post without this session's CSRF token, or from another origin", async () => {
    const { csrf: _csrf, ...withoutCsrf } = validForm("https://csrf.example.com");
    expect((await postConfig(withoutCsrf)).status).toBe(403);
    expect((await postConfig({ ...withoutCsrf, csrf: "x".repeat(csrf.length) })).status).toBe(403);
    const foreign = await postConfig(validForm("https://csrf.example.com"), {
      origin: "https://evil.example",
    });
    expect(foreign.status).toBe(403);
    expect(await storedOrigins()).toEqual(["https://kept.example.com"]);
  });
});

describe("console: rate_limit_per_minute", () => {
  const storedTier = async () =>
    (await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, { token: dev.token })).body
      .rate_limit_per_minute;

  it("offers the tiers with the stored one selected, saves a chosen tier and refuses any other", async () => {
    const page = await (await api(projectPath(), { headers: { cookie } })).text();
    expect(page).toMatch(/<select name="rate_limit_per_minute">/);
    expect(page).toMatch(/<option value="6000" selected>6000<\/option>/);
    for (const tier of ["600", "60000"]) expect(page).toContain(`<option value="${tier}" >${tier}</option>`);

    const saved = await postConfig({ ...validForm(""), rate_limit_per_minute: "600" });
    expect(saved.status).toBe(303);
    expect(await storedTier()).toBe(600);
    const shown = await (await api(projectPath(), { headers: { cookie } })).text();
    expect(shown).toMatch(/<option value="600" selected>600<\/option>/);

    const refused = await postConfig({ ...validForm(""), rate_limit_per_minute: "1000" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("must be one of 600, 6000, 60000");
    expect(await storedTier()).toBe(600);

    // A form without the field (an older page) leaves the tier as it is.
    expect((await postConfig(validForm(""))).status).toBe(303);
    expect(await storedTier()).toBe(600);
  });
});
