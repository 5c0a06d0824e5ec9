/**
 * The console and /docs in a real browser: Playwright (`playwright-core`) driving Debian's Chromium
 * against a Worker started like `npm run dev`. Signs in, toggles exposure and watches the tools
 * preview change, changes auth_mode (and sees a validation message), edits allowed_origins (and sees
 * the config service's message for a bad one), reads the daily usage chart (and its hidden table), lists
 * a connected assistant (OAuth grant) and revokes it with its form, lists the app's events (a hostile
 * property as text) and filters them, renders /docs. Screenshots land in `test-artifacts/browser/` (gitignored).
 */
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectAssistant } from "../support/connect-assistant.ts";
import { type DevServer, request, signupDeveloper, startDevServer } from "../support/dev-server.ts";

const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
  (path): path is string => Boolean(path && existsSync(path)),
);
const ARTIFACTS = resolve(import.meta.dirname, "../../test-artifacts/browser");
const LAUNCH_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

if (!CHROMIUM)
  console.warn(
    "browser tests skipped: no Chromium at /usr/bin/chromium (apt-get install -y chromium, or set CHROMIUM_PATH)",
  );

describe.skipIf(!CHROMIUM)("console and /docs in Chromium", () => {
  let server: DevServer;
  let browser: Browser;
  let page: Page;
  let dev: { token: string; projectId: string };
  const policyViolations: string[] = [];

  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const admin = (path: string, method: string, json: unknown) =>
    request(`${server.base}/v1/admin/projects/${dev.projectId}${path}`, {
      method,
      headers: { authorization: `Bearer ${dev.token}`, "content-type": "application/json" },
      body: JSON.stringify(json),
    });
  const toolsOf = (scope: string) =>
    page
      .locator(`.scope[data-scope="${scope}"] details.tool`)
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-tool")));

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    [server, browser] = await Promise.all([
      startDevServer(),
      chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS, headless: true }),
    ]);
    dev = await signupDeveloper(server.base);
    const created = await admin("/collections", "POST", {
      name: "notes",
      columns: [{ name: "body", type: "text", required: true, description: "The note" }],
      access: { read: "owner", write: "owner" },
    });
    expect(created.status).toBe(201);
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    // What Chromium reports when a page's CSP (nonce'd script only, Trusted Types) refuses something.
    page.on("console", (message) => {
      if (/Content Security Policy|Trusted/i.test(message.text())) policyViolations.push(message.text());
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("signs in with a developer token kept in an HttpOnly cookie", async () => {
    await page.goto(`${server.base}/console`);
    await shot("01-sign-in");
    await page.fill('input[name="token"]', "amba_dev_not_a_token");
    await page.click('button[type="submit"]');
    await expect(page.locator(".notice.error").textContent()).resolves.toContain("not valid");

    await page.fill('input[name="token"]', dev.token);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${server.base}/console`);
    await expect(page.locator("h2").first().textContent()).resolves.toMatch(/^Projects of dev-/);
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({
      name: "amba_console",
      httpOnly: true,
      sameSite: "Strict",
      path: "/console",
    });
    expect(await page.evaluate("document.cookie")).toBe("");
    await shot("02-projects");
    await page.click(`a[href="/console/projects/${dev.projectId}"]`);
    await page.waitForURL(`**/console/projects/${dev.projectId}`);
    await expect(page.locator('table.columns[data-collection="notes"]').textContent()).resolves.toContain(
      "body",
    );
    // The page's own script ran under its CSP: it unhides the copy buttons.
    expect(await page.locator('button[data-copy="config-claude"]').evaluate((b) => b.hidden)).toBe(false);
  });

  it("toggles exposure and the tools preview follows", async () => {
    expect(await toolsOf("developer")).not.toContain("notes_list");
    await page.check('input[name="collections"][value="notes"]');
    await page.click('#exposure button[type="submit"]');
    await page.waitForLoadState("load");
    expect(await page.isChecked('input[name="collections"][value="notes"]')).toBe(true);
    expect(await toolsOf("developer")).toEqual(
      expect.arrayContaining(["notes_list", "notes_insert", "notes_find"]),
    );
    expect(await toolsOf("end_user")).toContain("notes_list");
    await page.locator('details.tool[data-tool="notes_insert"] summary').first().click();
    await shot("03-exposed");
  });

  it("changes auth_mode, and shows the server's validation message for a bad slug", async () => {
    await page.selectOption('select[name="auth_mode"]', "developer_only");
    await page.click('#config button[type="submit"]');
    await page.waitForLoadState("load");
    await expect(page.locator("#current-config").textContent()).resolves.toContain(
      "auth_mode=developer_only",
    );

    await page.fill('input[name="slug"]', "a".repeat(64));
    await page.click('#config button[type="submit"]');
    await page.waitForLoadState("load");
    await expect(page.locator("#config .notice.error").textContent()).resolves.toBe(
      "slug: must be at most 63 characters",
    );
    await shot("04-config-error");

    await page.fill('input[name="slug"]', `notes-${dev.projectId.slice(0, 8)}`);
    await page.click('#config button[type="submit"]');
    await page.waitForLoadState("load");
    await expect(page.locator("#hostname-url").textContent()).resolves.toMatch(
      /^https?:\/\/notes-[0-9a-f]{8}\./,
    );
    await expect(page.locator('#connection pre[id="config-claude"]').textContent()).resolves.toContain(
      `claude mcp add --transport http amba-cookbook ${server.base}/app/${dev.projectId}/mcp`,
    );
  });

  it("edits allowed_origins one per line, and shows the server's message for a bad origin", async () => {
    const origins = page.locator("#allowed-origins code.origin");
    expect(await origins.count()).toBe(0);
    await page.fill('textarea[name="allowed_origins"]', "https://app.example.com\n\n http://localhost:5173 ");
    await page.click('#config button[type="submit"]');
    await page.waitForLoadState("load");
    expect(await origins.allTextContents()).toEqual(["https://app.example.com", "http://localhost:5173"]);
    expect(await page.inputValue('textarea[name="allowed_origins"]')).toBe(
      "https://app.example.com\nhttp://localhost:5173",
    );
    const stored = await request(`${server.base}/v1/admin/projects/${dev.projectId}/app-mcp/config`, {
      headers: { authorization: `Bearer ${dev.token}` },
    });
    expect(((await stored.json()) as { allowed_origins: string[] }).allowed_origins).toEqual([
      "https://app.example.com",
      "http://localhost:5173",
    ]);

    await page.fill(
      'textarea[name="allowed_origins"]',
      "https://app.example.com\nhttps://app.example.com/path",
    );
    await page.click('#config button[type="submit"]');
    await page.waitForLoadState("load");
    await expect(page.locator("#config .notice.error").textContent()).resolves.toBe(
      "allowed_origins.1: must be an exact origin: http(s)://host[:port] in lowercase, without path, query or trailing slash",
    );
    // Nothing was saved: the page shows the stored list again.
    expect(await origins.allTextContents()).toEqual(["https://app.example.com", "http://localhost:5173"]);
    await page.locator("#config").scrollIntoViewIfNeeded();
    await shot("07-allowed-origins-error");
  });

  it("charts agent tool calls per day", async () => {
    const call = await request(`${server.base}/app/${dev.projectId}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${dev.token}`,
        "content-type": "application/json",
        accept: "application/json",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "notes_list", arguments: {} },
      }),
    });
    expect(((await call.json()) as { result: { isError: boolean } }).result.isError).toBe(false);
    const today = new Date().toISOString().slice(0, 10);
    // Metering is written by a batched flush at most 250 ms after the call (src/usage/metering.ts).
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator("#usage-chart g.bar").last().getAttribute("data-value");
        },
        { timeout: 10_000, interval: 250 },
      )
      .toBe("1");
    // 30 days, oldest first, ending today (UTC); the call is on today's bar, the others are empty.
    const bars = page.locator("#usage-chart g.bar");
    expect(await bars.count()).toBe(30);
    expect(await bars.last().getAttribute("data-day")).toBe(today);
    expect(await bars.evaluateAll((gs) => gs.map((g) => Number(g.getAttribute("data-value"))))).toEqual([
      ...Array(29).fill(0),
      1,
    ]);
    await expect(bars.last().locator("rect > title").textContent()).resolves.toBe(`${today}: 1`);
    // The chart is one named image; its numbers are a (visually hidden) table in the accessibility tree.
    const chart = page.getByRole("img", { name: /^Agent tool calls per day, the last 30 days/ });
    await expect(chart.getAttribute("id")).resolves.toBe("usage-chart");
    const table = page.getByRole("table", { name: "Agent tool calls per day, the last 30 days" });
    expect(await table.getByRole("row").count()).toBe(31);
    expect(await table.getByRole("row", { name: `${today} 1`, exact: true }).count()).toBe(1);
    const hidden = page.locator("#usage .visually-hidden").filter({ has: page.locator("#usage-table") });
    expect(await hidden.boundingBox().then((box) => box && box.width * box.height)).toBeLessThanOrEqual(1);
    // The month total stays.
    await expect(page.locator('#usage [data-metric="agent_tool_calls"]').textContent()).resolves.toBe(
      "agent_tool_calls: 1",
    );
    await page.locator("#usage").scrollIntoViewIfNeeded();
    await shot("05-project");
    await page.locator("#usage").screenshot({ path: join(ARTIFACTS, "08-usage-daily.png") });
  });

  it("lists a connected assistant (its name as text) and revokes it with the form", async () => {
    const assistant = await connectAssistant(server.base, dev, "Evil <b>Bot</b>");
    await page.goto(`${server.base}/console/projects/${dev.projectId}`);
    await page.click("#grants-link");
    await page.waitForURL(`**/console/projects/${dev.projectId}/grants`);
    const row = page.locator(`tr[data-grant="${assistant.grantId}"]`);
    await expect(row.locator("td").first().textContent()).resolves.toContain("Evil <b>Bot</b>");
    expect(await row.locator("b").count()).toBe(0);
    await shot("09-connected-apps");
    await Promise.all([
      page.waitForURL(/\/grants#grants$/),
      row.getByRole("button", { name: /^Revoke Evil <b>Bot<\/b> for / }).click(),
    ]);
    expect(await page.locator(`tr[data-grant="${assistant.grantId}"]`).count()).toBe(0);
    await expect(page.locator("#grants").textContent()).resolves.toContain("No assistant is connected");
    const refused = await request(`${server.base}/app/${dev.projectId}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${assistant.accessToken}`,
        "content-type": "application/json",
        accept: "application/json",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(refused.status).toBe(401);
  });

  it("lists the app's events (a hostile property as text) and filters them by name", async () => {
    const key = await admin("/client-keys", "POST", { name: "browser-events" });
    expect(key.status).toBe(201);
    const { client_key } = (await key.json()) as { client_key: string };
    const hostile = `<img src=x onerror="document.title='pwned'">`;
    const sent = await request(`${server.base}/v1/events`, {
      method: "POST",
      headers: { "x-api-key": client_key, "content-type": "application/json" },
      body: JSON.stringify({
        events: [
          { name: "app.opened", properties: { note: hostile } },
          { name: "recipe_viewed", properties: { recipe: "cake" } },
        ],
      }),
    });
    expect(sent.status).toBe(201);
    await page.goto(`${server.base}/console/projects/${dev.projectId}`);
    await page.click("#events-link");
    await page.waitForURL(`**/console/projects/${dev.projectId}/events`);
    const rows = page.locator("#events tr[data-event]");
    await expect(rows.locator("td:first-child").allTextContents()).resolves.toEqual([
      "recipe_viewed",
      "app.opened",
    ]);
    await expect(rows.nth(1).locator(".properties").textContent()).resolves.toBe(
      JSON.stringify({ note: hostile }),
    );
    expect(await page.locator("#events img").count()).toBe(0);
    expect(await page.title()).not.toBe("pwned");
    await shot("10-events");
    await page.fill('#events input[name="name"]', "app.opened");
    await Promise.all([page.waitForURL(/\/events\?name=app\.opened$/), page.click("#events button")]);
    await expect(rows.locator("td:first-child").allTextContents()).resolves.toEqual(["app.opened"]);
  });

  it("reaches the demo app's MCP at <slug>.mcp.localhost (Chromium resolves *.localhost itself)", async () => {
    const hostnameUrl = `http://demo.mcp.localhost:${server.port}/mcp`;
    expect(server.output()).toContain(`hostname MCP    ${hostnameUrl}`);
    await page.goto(`http://demo.mcp.localhost:${server.port}/healthz`);
    const names = await page.evaluate(
      `fetch("/mcp", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer ${server.demo.developerToken}" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) }).then((r) => r.json()).then((b) => b.result.tools.map((t) => t.name))`,
    );
    expect(names).toEqual(expect.arrayContaining(["my_first_project_list_collections", "recipes_list"]));
  });

  it("renders /docs", async () => {
    await page.goto(`${server.base}/docs`);
    await expect(page.locator("h1").textContent()).resolves.toContain("Amba app MCP API");
    const op = page.locator("details.op", { hasText: "/v1/admin/projects/{id}/app-mcp/config" }).first();
    await op.locator("summary").click();
    await expect(op.locator("pre").first().isVisible()).resolves.toBe(true);
    await page.fill("#token", dev.token);
    const projects = page.locator("details.op#getV1AdminProjects");
    await projects.locator("summary").click();
    await projects.locator('button[type="submit"]').click();
    await projects.locator("pre.result").filter({ hasText: "200" }).waitFor();
    expect(await projects.locator("pre.result").textContent()).toMatch(/^200 OK\n/);
    await shot("06-docs");
    // Nothing any page did in these tests was refused by its CSP or Trusted Types…
    expect(policyViolations).toEqual([]);
    // …which Chromium enforces: a string reaches no HTML sink, not even from script on the page.
    const sink = `try { document.body.insertAdjacentHTML("beforeend", "<b>x</b>"); "assigned" } catch (e) { e.name }`;
    expect(await page.evaluate(sink)).toBe("TypeError");
  });
});
