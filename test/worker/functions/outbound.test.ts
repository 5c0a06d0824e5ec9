/**
 * The outbound policy on the real routes (finding 1): deploy refuses internal destinations with a
 * 400 naming the rule (REST and the platform MCP), a stored URL is checked again before every
 * invocation, and redirects come back as the upstream's answer instead of being followed. The
 * tests run with `FUNCTION_URL_POLICY = "dev"` (loopback echo server); the strict policy is
 * exercised by passing it to the execution path.
 */
import { describe, expect, inject, it } from "vitest";
import type { Principal } from "../../../src/credentials/principal.ts";
import { AppError } from "../../../src/errors.ts";
import { invokeFunction, loadFunction } from "../../../src/functions/service.ts";
import { unlimited } from "../../../src/rate-limit.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import {
  apiJson,
  endUserHeaders,
  expectError,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
  unmetered,
} from "../helpers.ts";

const echoUrl = inject("echoUrl");
const localDbUrl = inject("localDbUrl");
const echoPort = new URL(echoUrl).port;

const deploy = (dev: TestDeveloper, name: string, url: string) =>
  apiJson(`/v1/admin/projects/${dev.projectId}/functions/deploy`, { token: dev.token, json: { name, url } });

describe("function URLs: deploy", () => {
  it.each([
    ["http://10.0.0.7/fn", "private address 10.0.0.7"],
    ["http://169.254.169.254/latest/meta-data", "link-local address 169.254.169.254"],
    ["http://[::ffff:169.254.169.254]/", "link-local (IPv4 inside IPv6)"],
    ["http://0xa9fea9fe/", "link-local address 169.254.169.254"],
    ["http://100.100.1.1/", "shared (CGNAT) address 100.100.1.1"],
    ["http://[fd00::5]/", "private (unique local) address [fd00::5]"],
    ["http://0.0.0.0:9000/", "unspecified address 0.0.0.0"],
    ["http://metadata.google.internal/", "internal host metadata.google.internal"],
    ["http://printer.local/", "internal host printer.local"],
    [`http://user:pass@127.0.0.1:${echoPort}/`, "credentials in the URL are not allowed"],
    ["ftp://fn.example.com/", "must be an absolute http:// or https:// URL"],
  ])("refuses %s with a 400 naming the rule, storing nothing", async (url, rule) => {
    const dev = await signupDeveloper();
    const res = await deploy(dev, "f", url);
    expectError(res, 400, rule);
    const listed = await apiJson(`/v1/admin/projects/${dev.projectId}/functions`, { token: dev.token });
    expect(listed.body.functions).toEqual([]);
  });

  it("names the rule and uses the invalid_url code", async () => {
    const dev = await signupDeveloper();
    const res = await deploy(dev, "f", "http://192.168.0.1/");
    expect(res.body).toEqual({
      error: {
        code: "invalid_url",
        message: "function url refused: private address 192.168.0.1 is not allowed",
      },
    });
  });

  it("allows loopback under the dev policy (amber serve on 127.0.0.1), in any IPv4 spelling", async () => {
    const dev = await signupDeveloper();
    expect((await deploy(dev, "a", echoUrl)).status).toBe(201);
    expect((await deploy(dev, "b", `http://2130706433:${echoPort}/`)).status).toBe(201);
    expect((await deploy(dev, "c", `http://localhost:${echoPort}/`)).status).toBe(201);
  });

  it("applies the strict policy to the platform MCP deploy tool", async () => {
    const dev = await signupDeveloper();
    const client = await connectClient("http://local/mcp", { authorization: `Bearer ${dev.token}` });
    try {
      const result = await client.callTool({
        name: "amba_functions_deploy",
        arguments: { project_id: dev.projectId, name: "f", url: "https://169.254.169.254/" },
      });
      expect(result.isError).toBe(true);
      expect(resultJson(result)).toEqual({
        error: {
          code: "invalid_url",
          message: "function url refused: link-local address 169.254.169.254 is not allowed",
        },
      });
    } finally {
      await client.close();
    }
  });
});

describe("function URLs: invoke", () => {
  async function setup(url: string) {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    expect((await deploy(dev, "f", url)).status).toBe(201);
    const path = `/v1/projects/${dev.projectId}/functions/f/invoke`;
    const headers = endUserHeaders(dev.clientKey, user.sessionToken);
    const invoke = Object.assign(() => apiJson(path, { headers, json: {} }), { path, headers });
    const principal: Principal = {
      scope: "end_user",
      project: { id: dev.projectId },
      user: { id: user.userId, email: user.email },
      clientKeyId: "key-1",
    } as unknown as Principal;
    return { dev, invoke, principal };
  }

  it("a function pointed at the local database endpoint gets a 401 there, not SQL (dev policy)", async () => {
    const { invoke } = await setup(localDbUrl);
    const res = await apiJson(invoke.path, {
      headers: invoke.headers,
      json: { body: { query: "select email from developers", params: [] } },
    });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: "missing or invalid database credential" });
  });

  it("does not follow redirects: a 3xx is the upstream's answer", async () => {
    const { invoke } = await setup(`${echoUrl}/redirect`);
    const res = await invoke();
    expect(res.status).toBe(302);
    expect(res.body).toEqual({ moved: "/followed" });
  });

  it("checks the stored URL again before every call: refused under the strict policy, nothing sent", async () => {
    const { dev, principal } = await setup(`${echoUrl}/hook`);
    const fn = await loadFunction(testDb(), dev.projectId, "f");
    // The execution path itself, unlimited and unmetered, under the policy named.
    const invokeUnder = (policy: "strict" | "dev", target: typeof fn) =>
      invokeFunction(
        { policy, limit: unlimited, meter: unmetered, signing: { secret: "amba_fsig_test", previous: null } },
        principal,
        target,
        {},
      );
    const error = await invokeUnder("strict", fn).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ status: 400, code: "invalid_url" });
    expect((error as AppError).message).toContain("scheme http is not allowed (https only)");
    const https = { ...fn, url: `${fn.url}`.replace("http:", "https:") };
    const refused = await invokeUnder("strict", https).catch((err: unknown) => err);
    expect((refused as AppError).message).toBe(
      "function url refused: loopback address 127.0.0.1 is not allowed",
    );
    const ok = await invokeUnder("dev", fn);
    expect(ok.status).toBe(200);
  });
});
