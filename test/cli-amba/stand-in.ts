/**
 * A loopback server standing in for the platform MCP, for running the built `amba` bin against it:
 * each `tools/call` it receives is recorded and answered with what `answer` gives for it (a tool's
 * value, or an `isError` one) — so a test sees the arguments a command sends and how it prints the
 * answer, with no Worker behind it.
 */
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { inject } from "vitest";
import { cleanEnv, NODE } from "../cli/helpers.ts";

/** One `tools/call` as the server saw it. */
export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** What the stand-in answers a call with: the tool's value, and whether it is an error result. */
export type StandInAnswer = { value: unknown; isError?: boolean };

export interface StandIn {
  /** The calls seen so far (clear it with `calls.length = 0`). */
  calls: ToolCall[];
  /** Run the built `amba` with `args` against the stand-in: its stdout, stderr and exit status. */
  amba(args: string[]): Promise<{ stdout: string; stderr: string; code: number }>;
  close(): void;
}

/** Start a stand-in on a free loopback port, the bin using `token` as its developer token. */
export async function startStandIn(
  token: string,
  answer: (call: ToolCall) => StandInAnswer,
): Promise<StandIn> {
  const calls: ToolCall[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const rpc = JSON.parse(body) as { id: number; params: ToolCall };
      calls.push(rpc.params);
      const { value, isError } = answer(rpc.params);
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: rpc.id,
          result: {
            content: [{ type: "text", text: JSON.stringify(value) }],
            structuredContent: value,
            ...(isError ? { isError: true } : {}),
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const bin = join(dirname(inject("amberBin")), "amba.mjs");
  return {
    calls,
    amba: (args) => {
      const env = cleanEnv({ AMBA_URL: url, AMBA_TOKEN: token, XDG_CONFIG_HOME: "/nonexistent" });
      return new Promise((resolve) =>
        execFile(NODE, [bin, ...args], { env, timeout: 20_000 }, (error, stdout, stderr) =>
          resolve({ stdout, stderr, code: error ? Number(error.code ?? 1) : 0 }),
        ),
      );
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
