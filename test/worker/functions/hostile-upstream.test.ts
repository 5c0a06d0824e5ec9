/**
 * The function execution path in workerd against a hostile upstream (the echo server's `/reply`,
 * scripted per call): a compressed bomb, a body that stalls after its headers. Whatever a
 * developer's URL answers, the call ends within the deadline and the cap, as a 502 or 504.
 */
import { describe, expect, inject, it, vi } from "vitest";
import { AppError } from "../../../src/errors.ts";
import { buildUpstreamRequest, callUpstream, MAX_RESPONSE_BYTES } from "../../../src/functions/invoke.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import { apiJson, endUserHeaders, signupDeveloper, signupUser } from "../helpers.ts";

const echoUrl = inject("echoUrl");

const reply = { name: "reply", version: 1, url: `${echoUrl}/reply`, mcp: null };
const identity = { projectId: "p", userId: "u", userEmail: "u@example.com", requestId: "r" };

/**
 * `callUpstream` of `reply` scripted to answer `script`; the error it fails with. The deadline is
 * short where a test waits for it, and long where the cap must end the call first (1 MiB through
 * the capped reader took over 300 ms on a loaded machine).
 */
async function failure(script: unknown, timeoutMs = 30_000): Promise<AppError> {
  const request = buildUpstreamRequest(reply, identity, { body: script });
  const error = await callUpstream(request, { timeoutMs }).catch((err: unknown) => err);
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe("a hostile upstream", () => {
  it("whose body stalls after the headers fails with 504 at the deadline, declared length or not", async () => {
    const part: [string, number] = ['{"a":', 1];
    for (const script of [
      { parts: [part], hang: true, length: 100 },
      { parts: [part], hang: true },
    ]) {
      expect(await failure(script, 300)).toMatchObject({ status: 504, code: "function_timeout" });
    }
  });

  it("answering a gzip bomb (8 MiB of JSON in a few KiB) fails with 502, read no further than the cap", async () => {
    const bomb = {
      parts: [
        ['"', 1],
        ["0", 8 * MAX_RESPONSE_BYTES],
        ['"', 1],
      ],
      gzip: true,
    };
    expect(await failure(bomb)).toMatchObject({
      status: 502,
      message: `function response exceeds ${MAX_RESPONSE_BYTES} bytes`,
    });
  });

  it("declaring a small Content-Length over a chunked body is read no further than the cap (502, not 504)", async () => {
    // workerd passes both headers on; read with arrayBuffer() on the declared length's word, the body
    // was buffered whole, however large, and a stalled one waited for the deadline.
    const chunk = "0".repeat(64 * 1024);
    const chunks = `${chunk.length.toString(16)}\r\n${chunk}\r\n`.repeat(
      MAX_RESPONSE_BYTES / chunk.length + 1,
    );
    const head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n";
    expect(await failure({ parts: [], raw: `${head}${chunks}`, hang: true })).toMatchObject({
      status: 502,
      message: `function response exceeds ${MAX_RESPONSE_BYTES} bytes`,
    });
  });
});

describe("metering of function tool calls", () => {
  it("meters a 2xx exactly once, and neither a non-2xx nor an oversized answer", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const admin = `/v1/admin/projects/${dev.projectId}`;
    for (const [name, url] of [
      ["ok", echoUrl],
      ["reply", `${echoUrl}/reply`],
    ]) {
      const deployed = await apiJson(`${admin}/functions/deploy`, { token: dev.token, json: { name, url } });
      expect(deployed.status).toBe(201);
    }
    const exposure = { method: "PUT", token: dev.token, json: { functions: ["ok", "reply"] } };
    expect((await apiJson(`${admin}/app-mcp/exposure`, exposure)).status).toBe(200);
    const client = await connectClient(
      `http://local/app/${dev.projectId}/mcp`,
      endUserHeaders(dev.clientKey, user.sessionToken),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      const tool = (name: string) => names.find((t) => t.endsWith(`_fn_${name}`)) ?? name;
      for (const body of [{ status: 500, parts: [["{}", 1]] }, { parts: [["0", MAX_RESPONSE_BYTES + 1]] }]) {
        const result = await client.callTool({ name: tool("reply"), arguments: { body } });
        expect(result.isError, JSON.stringify(resultJson(result))).toBe(true);
      }
      expect((await client.callTool({ name: tool("ok"), arguments: {} })).isError).toBe(false);
    } finally {
      await client.close();
    }
    // Batched per isolate and written after the responses: once the success shows, so would the rest.
    await vi.waitFor(async () => {
      const { usage } = (await apiJson(`${admin}/billing`, { token: dev.token })).body;
      expect(usage).toMatchObject({ function_invocations: 1, agent_tool_calls: 1 });
    });
  });
});
