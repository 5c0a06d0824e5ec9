/**
 * The `amba` CLI, black-box: the built bin (run with the machine's Node, as `npx amba` would) against
 * a real Worker started like `npm run dev`. Each command goes through the platform MCP.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { NODE } from "../cli/helpers.ts";
import { WELCOME_EMAIL_MCP } from "../fixtures.ts";
import { connectAssistant } from "../support/connect-assistant.ts";
import { type DevServer, freePort, request, signupDeveloper, startDevServer } from "../support/dev-server.ts";

let server: DevServer;
let bin: string;
let configHome: string;
let dev: { token: string; projectId: string };

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Run `amba …` with a private config dir; `env` adds to (or, with undefined, removes from) it. */
function amba(args: string[], env: Record<string, string | undefined> = {}, input?: string): Run {
  const base: Record<string, string | undefined> = {
    ...process.env,
    XDG_CONFIG_HOME: configHome,
    AMBA_URL: server.base,
    AMBA_TOKEN: dev.token,
    AMBA_PROJECT: undefined,
  };
  const merged = { ...base, ...env };
  const clean = Object.fromEntries(
    Object.entries(merged).filter(([, v]) => v !== undefined),
  ) as NodeJS.ProcessEnv;
  const res = spawnSync(NODE, [bin, ...args], {
    env: clean,
    encoding: "utf8",
    input,
    timeout: 30_000,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

const json = (run: Run) => {
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  return JSON.parse(run.stdout);
};

/** The status of a `tools/list` at the project's app MCP with this Bearer. */
const appMcpStatus = async (token: string) =>
  (
    await request(`${server.base}/app/${dev.projectId}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    })
  ).status;

beforeAll(async () => {
  configHome = mkdtempSync(join(tmpdir(), "amba-config-"));
  // Built by the node project's global setup (test/support/global-setup.ts), next to `amber`.
  bin = join(dirname(inject("amberBin")), "amba.mjs");
  server = await startDevServer();
  dev = await signupDeveloper(server.base);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(configHome, { recursive: true, force: true });
});

// Each test runs several CLI processes against one Worker (the first cold request compiles the cold app).
describe("amba CLI against a running Worker", { timeout: 60_000 }, () => {
  it("logs in, stores URL and token with mode 0600, and uses them without environment", () => {
    const login = amba(["login", "--url", server.base, "--token", dev.token], {
      AMBA_URL: undefined,
      AMBA_TOKEN: undefined,
    });
    expect(login.stderr).toBe("");
    expect(login.stdout).toMatch(/^signed in to http:\/\/127\.0\.0\.1:\d+ as dev-.*@example\.com/);
    const file = join(configHome, "amba", "config.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ url: server.base, token: dev.token });

    const projects = json(amba(["projects", "--json"], { AMBA_URL: undefined, AMBA_TOKEN: undefined }));
    expect(projects.projects).toEqual([expect.objectContaining({ id: dev.projectId, name: "Cookbook" })]);
    const table = amba(["projects"], { AMBA_URL: undefined, AMBA_TOKEN: undefined });
    expect(table.stdout.split("\n")[0]).toMatch(/^id\s+name\s+meta_rev\s+created_at$/);
    expect(table.stdout).toContain(dev.projectId);
  });

  it("creates and lists collections, exposes one, and changes the config", () => {
    const columns = JSON.stringify([
      { name: "title", type: "text", required: true },
      { name: "calories", type: "integer" },
    ]);
    const created = json(amba(["collections", "create", "recipes", "--columns", columns, "--json"]));
    expect(created).toMatchObject({ name: "recipes", access: { read: "owner", write: "owner" } });

    const listed = amba(["collections", "list"]);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(/recipes\s+.*title text.*calories integer/);

    expect(json(amba(["expose", "--collections", "recipes", "--json"]))).toEqual({
      collections: ["recipes"],
      functions: [],
    });
    const config = json(
      amba(["config", "set", "--auth-mode", "developer_only", "--slug", "cookbook-cli", "--json"]),
    );
    expect(config).toMatchObject({
      enabled: true,
      auth_mode: "developer_only",
      slug: "cookbook-cli",
      connection: { url: `${server.base}/app/${dev.projectId}/mcp` },
    });
    expect(config.connection.hostname_url).toMatch(/^https?:\/\/cookbook-cli\./);
    expect(json(amba(["config", "get", "--project", dev.projectId, "--json"])).auth_mode).toBe(
      "developer_only",
    );
    expect(json(amba(["config", "set", "--no-enabled", "--slug", "null", "--json"]))).toMatchObject({
      enabled: false,
      slug: null,
    });
    json(amba(["config", "set", "--enabled", "--auth-mode", "all", "--json"]));
  });

  it("deploys, lists versions of and promotes a function", () => {
    json(amba(["functions", "deploy", "greet", "--url", "http://127.0.0.1:9/v1", "--json"]));
    const second = json(amba(["functions", "deploy", "greet", "--url", "http://127.0.0.1:9/v2", "--json"]));
    expect(second).toMatchObject({ name: "greet", version: 2, active: true });
    const versions = json(amba(["functions", "versions", "greet", "--json"]));
    expect(versions.versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);
    const promoted = json(amba(["functions", "promote", "greet", "1", "--json"]));
    expect(promoted).toMatchObject({ version: 1, url: "http://127.0.0.1:9/v1", active: true });
    const secret = json(amba(["functions", "signing-secret", "--json"]));
    expect(secret.signing_secret).toMatch(/^amba_fsig_[0-9a-f]{64}$/);
    const rotated = json(amba(["functions", "rotate-signing-secret", "--json"]));
    expect(rotated.signing_secret).toMatch(/^amba_fsig_[0-9a-f]{64}$/);
    expect(rotated.signing_secret).not.toBe(secret.signing_secret);
    expect(rotated.previous_expires_at).toBeNull();
    const overlap = json(
      amba(["functions", "rotate-signing-secret", "--previous-valid-for-seconds", "3600", "--json"]),
    );
    expect(Date.parse(overlap.previous_expires_at)).toBeGreaterThan(Date.now() + 3500_000);
    // Seed 004's metadata for `amba functions deploy`: the annotation ships with the version;
    // a keyword outside the subset is refused at deploy time, in one line.
    const mcp = JSON.stringify(WELCOME_EMAIL_MCP);
    const typed = json(
      amba([
        "functions",
        "deploy",
        "send_welcome_email",
        "--url",
        "http://127.0.0.1:9/w",
        "--mcp",
        mcp,
        "--json",
      ]),
    );
    expect(typed).toMatchObject({
      name: "send_welcome_email",
      version: 1,
      active: true,
      mcp: WELCOME_EMAIL_MCP,
    });
    const loose = {
      input_schema: { type: "object", properties: { to: { type: "string", format: "email" } } },
    };
    const refused = amba([
      "functions",
      "deploy",
      "loose",
      "--url",
      "http://127.0.0.1:9/l",
      "--mcp",
      JSON.stringify(loose),
    ]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^error: .*input_schema\.properties\.to\.format.*\n$/);
    // The seed's metadata without --url on a first deploy: the function exists, with no URL yet.
    const metadataOnly = json(amba(["functions", "deploy", "later", "--mcp", mcp, "--json"]));
    expect(metadataOnly).toMatchObject({ name: "later", version: 1, url: null, mcp: WELCOME_EMAIL_MCP });
  });

  it("reports billing status", () => {
    const status = json(amba(["billing", "status", "--json"]));
    expect(status.period).toMatch(/^\d{4}-\d{2}$/);
    expect(status.usage).toHaveProperty("agent_tool_calls");
    expect(amba(["billing", "status"]).stdout).toMatch(/^period: \d{4}-\d{2}\nusage: agent_tool_calls=\d+/);
  });

  it("takes --project as DESIGN.md writes it: that project's MCP config and billing status", () => {
    const second = json(amba(["projects", "create", "Pantry", "--json"]));
    expect(second.id).not.toBe(dev.projectId);
    const config = amba(["mcp", "config", "--client", "claude", "--project", second.id]);
    expect(config.status).toBe(0);
    expect(config.stdout).toContain(` ${server.base}/app/${second.id}/mcp `);
    const billing = json(amba(["billing", "status", "--project", second.id, "--json"]));
    expect(billing).toMatchObject({
      period: expect.stringMatching(/^\d{4}-\d{2}$/),
      usage: { agent_tool_calls: 0 },
    });
    const foreign = amba(["billing", "status", "--project", crypto.randomUUID(), "--json"]);
    expect(foreign.status).toBe(1);
    expect(foreign.stdout).toBe("");
    expect(foreign.stderr).toMatch(/^error: .*not found/);
  });

  it("reports usage per day, zero-filled, as a table", () => {
    // One spawn (the JSON is the platform tool's, checked equal to REST in the workerd suite).
    const range = ["billing", "daily", "--from", "2026-01-31", "--to", "2026-02-01"];
    expect(amba(range).stdout).toBe(
      "from: 2026-01-31\nto: 2026-02-01\nday         usage\n2026-01-31  agent_tool_calls=0 function_invocations=0 events=0\n2026-02-01  agent_tool_calls=0 function_invocations=0 events=0\n",
    );
  });

  it("prints a Claude Code config whose URL and header reach the app MCP", async () => {
    const out = amba(["mcp", "config", "--client", "claude"]);
    expect(out.status).toBe(0);
    const url = `${server.base}/app/${dev.projectId}/mcp`;
    expect(out.stdout).toBe(
      `claude mcp add --transport http amba-cookbook ${url} --header 'Authorization: Bearer ${dev.token}'\n`,
    );
    const res = await request(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        authorization: `Bearer ${dev.token}`,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    const body = (await res.json()) as { result: { tools: { name: string }[] } };
    expect(body.result.tools.map((t) => t.name)).toContain("recipes_list");

    const gemini = JSON.parse(amba(["mcp", "config", "--client", "gemini"]).stdout);
    expect(gemini).toEqual({
      mcpServers: { "amba-cookbook": { httpUrl: url, headers: { Authorization: `Bearer ${dev.token}` } } },
    });
    const asJson = json(amba(["mcp", "config", "--client", "claude", "--json"]));
    expect(asJson.alternatives[0].text).toContain("claude mcp add-json amba-cookbook");
  });

  it("prints the demo's hostname URL, which reaches its app MCP when the name resolves to loopback", async () => {
    const hostnameUrl = new URL(`http://demo.mcp.localhost:${server.port}/mcp`);
    expect(server.output()).toContain(`hostname MCP    ${hostnameUrl.href}`);
    // Node's resolver (getaddrinfo) does not map *.localhost to loopback; curl and browsers do.
    const body = await new Promise<string>((done, fail) => {
      const req = httpRequest(
        hostnameUrl,
        {
          method: "POST",
          lookup: (_host, options, callback) =>
            // biome-ignore lint/suspicious/noExplicitAny: net's lookup callback is overloaded on options.all
            (callback as any)(null, options.all ? [{ address: "127.0.0.1", family: 4 }] : "127.0.0.1", 4),
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${server.demo.developerToken}`,
          },
        },
        (res) => {
          let text = "";
          res.on("data", (chunk) => {
            text += chunk;
          });
          res.on("end", () => done(text));
        },
      );
      req.on("error", fail);
      req.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
    });
    const names = (JSON.parse(body) as { result: { tools: { name: string }[] } }).result.tools.map(
      (t) => t.name,
    );
    expect(names).toContain("recipes_list");
  });

  it("creates, lists and revokes developer tokens", () => {
    const created = json(amba(["tokens", "create", "--name", "ci", "--json"]));
    expect(created).toMatchObject({ name: "ci", revoked: false, token: expect.stringMatching(/^amba_dev_/) });
    const listed = json(amba(["tokens", "list", "--json"], { AMBA_TOKEN: created.token }));
    const current = listed.tokens.filter((t: { current: boolean }) => t.current);
    expect(current.map((t: { id: string }) => t.id)).toEqual([created.id]);
    expect(json(amba(["tokens", "revoke", created.id, "--json"]))).toMatchObject({
      id: created.id,
      revoked: true,
    });
    const refused = amba(["whoami"], { AMBA_TOKEN: created.token });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("invalid developer token");
    // The developer's last live token cannot be revoked: one readable line says why.
    const last = listed.tokens.find((t: { revoked: boolean; current: boolean }) => !t.revoked && !t.current);
    const locked = amba(["tokens", "revoke", last.id]);
    expect(locked.status).toBe(1);
    expect(locked.stderr).toMatch(/^error: .*last live developer token.*Create another token first.*\n$/);
    expect(amba(["whoami"]).status).toBe(0);
  });

  it("lists and revokes the project's OAuth grants (connected assistants)", async () => {
    const assistant = await connectAssistant(server.base, dev, "CLI Assistant");
    expect(await appMcpStatus(assistant.accessToken)).toBe(200);

    const listed = json(amba(["oauth", "grants", "list", "--project", dev.projectId, "--json"]));
    expect(listed.next_cursor).toBeNull();
    expect(listed.grants).toEqual([
      expect.objectContaining({
        id: assistant.grantId,
        client_name: "CLI Assistant",
        scope: "developer",
        resource: `${server.base}/app/${dev.projectId}/mcp`,
      }),
    ]);
    const table = amba(["oauth", "grants", "list"]);
    expect(table.stderr).toBe("");
    expect(table.stdout.split("\n")[0]).toMatch(/^id\s+client_id\s+client_name\s+scope\s/);
    expect(table.stdout).toMatch(
      new RegExp(`^${assistant.grantId.replace(".", "\\.")}\\s.*CLI Assistant\\s+developer\\s`, "m"),
    );
    expect(table.stdout).toMatch(/^next_cursor: -$/m);

    // This developer has two projects by now: a revoke names its project, never the "first" one.
    const unnamed = amba(["oauth", "grants", "revoke", assistant.grantId]);
    expect(unnamed.status).toBe(1);
    expect(unnamed.stderr).toBe(
      "error: --project is required for a command that deletes or replaces: you have 2 projects (amba projects list)\n",
    );
    expect(await appMcpStatus(assistant.accessToken)).toBe(200);
    expect(
      json(amba(["oauth", "grants", "revoke", assistant.grantId, "--project", dev.projectId, "--json"])),
    ).toEqual({
      id: assistant.grantId,
      revoked: true,
    });
    expect(await appMcpStatus(assistant.accessToken)).toBe(401);
    expect(json(amba(["oauth", "grants", "list", "--json"])).grants).toEqual([]);

    // Gone now, never there, or another developer's project: one readable line, exit 1.
    const again = amba(["oauth", "grants", "revoke", assistant.grantId, "--project", dev.projectId]);
    expect(again.status).toBe(1);
    expect(again.stdout).toBe("");
    expect(again.stderr).toBe("error: grant not found\n");
    const foreign = amba(["oauth", "grants", "list", "--project", crypto.randomUUID()]);
    expect(foreign.status).toBe(1);
    expect(foreign.stderr).toBe("error: project not found\n");
    // No id: the catalogue's own message for the missing argument, as for every command.
    const missing = amba(["oauth", "grants", "revoke"]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/^error: .*grant_id.*\n$/);
  });

  it("fails with one readable line and a non-zero status", async () => {
    const invalid = amba(["config", "set", "--auth-mode", "everyone"]);
    expect(invalid.status).toBe(1);
    expect(invalid.stdout).toBe("");
    expect(invalid.stderr).toBe("error: auth_mode: must be one of all, client_only, developer_only\n");

    const badToken = amba(["projects"], { AMBA_TOKEN: "amba_dev_nope" });
    expect(badToken.status).toBe(1);
    expect(badToken.stderr).toMatch(/^error: unauthorized: invalid developer token\n$/);

    const unknownFlag = amba(["collections", "list", "--colour", "red"]);
    expect(unknownFlag.status).toBe(2);
    expect(unknownFlag.stderr).toBe("error: unknown flag --colour (this command takes: none)\n");

    const noUrl = amba(["projects"], {
      AMBA_URL: undefined,
      XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "amba-empty-")),
    });
    expect(noUrl.status).toBe(1);
    expect(noUrl.stderr).toMatch(/^error: no service URL: set AMBA_URL/);

    const closed = `http://127.0.0.1:${await freePort()}`;
    const unreachable = amba(["projects"], { AMBA_URL: closed });
    expect(unreachable.stderr).toBe(`error: cannot reach ${closed}: ECONNREFUSED\n`);
  });
});
