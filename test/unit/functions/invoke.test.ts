import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toJsonSchema } from "@valibot/to-json-schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../../../src/errors.ts";
import type { DeployedFunction } from "../../../src/functions/definition.ts";
import {
  buildUpstreamRequest,
  callUpstream,
  functionArgumentsSchema,
  functionToolDescription,
  MAX_RESPONSE_BYTES,
  parseUpstreamBody,
} from "../../../src/functions/invoke.ts";

const identity = {
  projectId: "p-1",
  userId: "u-1",
  userEmail: "ü@example.com",
  requestId: "req-1",
};

const typed: DeployedFunction = {
  name: "send_welcome_email",
  version: 3,
  url: "https://fn.example.com/welcome?src=amba",
  mcp: {
    description: "Send the welcome email.",
    input_schema: {
      type: "object",
      properties: { user_id: { type: "string" }, template: { type: "string", enum: ["short", "full"] } },
      required: ["user_id"],
    },
  },
};
const untyped: DeployedFunction = { name: "ping", version: 1, url: "http://fn.example.com/ping", mcp: null };

async function rejection(fn: () => unknown): Promise<AppError> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("expected an AppError");
}

describe("buildUpstreamRequest", () => {
  it("posts validated arguments as JSON with the identity headers and nothing else", () => {
    const request = buildUpstreamRequest(typed, identity, { user_id: "u-9", template: "full" });
    expect(request.url).toBe("https://fn.example.com/welcome?src=amba");
    expect(request.init.method).toBe("POST");
    expect(JSON.parse(request.init.body as string)).toEqual({ user_id: "u-9", template: "full" });
    expect(request.init.headers).toEqual({
      accept: "application/json",
      "content-type": "application/json",
      "x-amba-project-id": "p-1",
      "x-amba-user-id": "u-1",
      "x-amba-user-email": encodeURIComponent("ü@example.com"),
      "x-amba-function": "send_welcome_email",
      "x-amba-function-version": "3",
      "x-amba-request-id": "req-1",
    });
  });

  it("rejects arguments that break the declared schema, naming the field", async () => {
    const error = await rejection(() => buildUpstreamRequest(typed, identity, { template: "long" }));
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/user_id/);
    const bad = await rejection(() =>
      buildUpstreamRequest(typed, identity, { user_id: "x", template: "long" }),
    );
    expect(bad.message).toMatch(/^template: /);
  });

  it("forwards body and query of an untyped function", () => {
    const request = buildUpstreamRequest(untyped, identity, {
      body: [1, 2],
      query: { q: "a b", n: 2, ok: true },
    });
    expect(request.url).toBe("http://fn.example.com/ping?q=a+b&n=2&ok=true");
    expect(JSON.parse(request.init.body as string)).toEqual([1, 2]);
    expect(request.init.headers["content-type"]).toBe("application/json");
  });

  it("sends no body when an untyped call has none", () => {
    const request = buildUpstreamRequest(untyped, identity, {});
    expect(request.init.body).toBeUndefined();
    expect(request.init.headers["content-type"]).toBeUndefined();
    expect(buildUpstreamRequest(untyped, identity, undefined).url).toBe("http://fn.example.com/ping");
  });

  it("rejects unknown keys and non-scalar query values on an untyped function", async () => {
    expect((await rejection(() => buildUpstreamRequest(untyped, identity, { user_id: "x" }))).status).toBe(
      400,
    );
    const error = await rejection(() => buildUpstreamRequest(untyped, identity, { query: { a: { b: 1 } } }));
    expect(error.message).toMatch(/^query\.a: /);
  });

  it("refuses query parameters the function's URL sets: an end user cannot add a second value", async () => {
    // `?token=…&mode=safe` plus a caller's `mode=admin` reached the upstream as `mode=safe&mode=admin`,
    // which frameworks reading the last (or every) value took as the caller's choice.
    const hook = { ...untyped, url: "https://hooks.example.com/x?token=s3cret&mode=safe" };
    const error = await rejection(() => buildUpstreamRequest(hook, identity, { query: { mode: "admin" } }));
    expect([error.status, error.code, error.message]).toEqual([
      400,
      "invalid_input",
      'query.mode: "mode" is set by the function\'s URL',
    ]);
    expect(
      (await rejection(() => buildUpstreamRequest(hook, identity, { query: { token: "x" } }))).status,
    ).toBe(400);
    const ok = buildUpstreamRequest(hook, identity, { query: { page: 2 } });
    expect(ok.url).toBe("https://hooks.example.com/x?token=s3cret&mode=safe&page=2");
  });

  it("appends a caller's query after the URL's own, leaving the developer's query byte for byte", () => {
    // Through URLSearchParams the whole query was serialised again (`a,b~c` → `a%2Cb%7Ec`, `flag` →
    // `flag=`), which breaks a URL whose query is signed.
    const signed = { ...untyped, url: "https://hooks.example.com/x?sig=a,b~c&flag&t=a%2fb#frag" };
    const request = buildUpstreamRequest(signed, identity, { query: { page: 2, q: "a b&c" } });
    expect(request.url).toBe("https://hooks.example.com/x?sig=a,b~c&flag&t=a%2fb&page=2&q=a+b%26c#frag");
    const bare = buildUpstreamRequest({ ...untyped, url: "https://h.example/x" }, identity, {
      query: { a: 1 },
    });
    expect(bare.url).toBe("https://h.example/x?a=1");
    expect(buildUpstreamRequest(signed, identity, {}).url).toBe(new URL(signed.url).toString());
  });
});

describe("functionArgumentsSchema", () => {
  it("describes the generic {body?, query?} input honestly", () => {
    const json = toJsonSchema(functionArgumentsSchema(untyped), { errorMode: "throw" });
    expect(json).toMatchObject({
      type: "object",
      properties: { body: { description: expect.any(String) }, query: { type: "object" } },
      required: [],
      additionalProperties: false,
    });
  });

  it("reuses the compiled schema for the same declaration object", () => {
    expect(functionArgumentsSchema(typed)).toBe(functionArgumentsSchema({ mcp: { ...typed.mcp } }));
    expect(functionArgumentsSchema(typed)).not.toBe(
      functionArgumentsSchema({ mcp: structuredClone(typed.mcp) }),
    );
  });
});

describe("functionToolDescription", () => {
  it("uses the declared description of a typed function as is", () => {
    expect(functionToolDescription(typed)).toBe("Send the welcome email.");
  });

  it("says honestly that an untyped function takes {body?, query?}", () => {
    const text = functionToolDescription(untyped);
    expect(text).toContain('"ping"');
    expect(text).toMatch(/declares no input schema/);
    expect(text).toContain("`body`");
    expect(text).toContain("`query`");
    expect(functionToolDescription({ ...untyped, mcp: { description: "Pings." } })).toMatch(
      /^Pings\. This function/,
    );
  });

  it("says a function with no URL yet cannot be called, typed or not", () => {
    const note =
      /Not callable yet: the function has no URL deployed, so a call fails with function_not_deployed/;
    expect(functionToolDescription({ ...typed, url: null })).toMatch(
      new RegExp(`^Send the welcome email\\. ${note.source}`),
    );
    expect(functionToolDescription({ ...untyped, url: null })).toMatch(note);
    expect(functionToolDescription(typed)).not.toMatch(note);
    expect(functionToolDescription(untyped)).not.toMatch(note);
  });
});

describe("parseUpstreamBody", () => {
  it.each([
    ['{"ok":true}', { ok: true }],
    ["[1]", [1]],
    ["plain text", { body: "plain text" }],
    ["", null],
  ])("%j", (text, expected) => {
    expect(parseUpstreamBody(text)).toEqual(expected);
  });
});

describe("callUpstream against loopback servers", () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/slow") return; // never answers
      if (req.url === "/text") {
        res.writeHead(418, { "content-type": "text/plain" });
        return res.end("short and stout");
      }
      if (req.url === "/huge") {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(`"${"x".repeat(MAX_RESPONSE_BYTES + 10)}"`);
      }
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ got: req.headers["x-amba-function"] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const request = (path: string) => buildUpstreamRequest({ ...untyped, url: `${base}${path}` }, identity, {});

  it("returns the upstream status and JSON body", async () => {
    expect(await callUpstream(request("/ok"))).toEqual({ status: 201, body: { got: "ping" } });
  });

  it("wraps a non-JSON body and keeps the status", async () => {
    expect(await callUpstream(request("/text"))).toEqual({ status: 418, body: { body: "short and stout" } });
  });

  it("fails with 504 when the function does not answer in time", async () => {
    const error = await rejection(() => callUpstream(request("/slow"), { timeoutMs: 200 }));
    expect([error.status, error.code]).toEqual([504, "function_timeout"]);
  });

  it("fails with 502 when the function cannot be reached", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await rejection(() =>
      callUpstream(buildUpstreamRequest({ ...untyped, url: `http://127.0.0.1:${port}/` }, identity, {})),
    );
    expect([error.status, error.code]).toEqual([502, "function_unreachable"]);
  });

  it("fails with 502 when the function answers a status outside 200–599 (no Response can carry it)", async () => {
    for (const status of [101, 600, 999]) {
      const answer = { status, body: null } as unknown as Response;
      const error = await rejection(() => callUpstream(request("/ok"), { fetch: async () => answer }));
      expect([error.status, error.code, error.message]).toEqual([
        502,
        "bad_gateway",
        `function answered with HTTP status ${status}; only 200–599 can be passed on`,
      ]);
    }
  });

  it("fails with 502 when the response is too large", async () => {
    const error = await rejection(() => callUpstream(request("/huge")));
    expect(error.status).toBe(502);
    expect(error.message).toMatch(/exceeds/);
  });
});
