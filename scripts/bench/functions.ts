/**
 * Function argument handling on the invoke path, as ratios against serializing the same arguments
 * (`JSON.stringify`, which every call pays anyway): validating with the cached compiled schema,
 * validating with a schema recompiled per call (what the cache saves), building the whole upstream
 * request, and checking a schema at deploy time.
 */
import * as v from "valibot";
import type { DeployedFunction } from "../../src/functions/definition.ts";
import { checkInputSchema, inputSchemaToValibot } from "../../src/functions/input-schema.ts";
import { buildUpstreamRequest, functionArgumentsSchema } from "../../src/functions/invoke.ts";

const schema = {
  type: "object",
  properties: {
    user_id: { type: "string", description: "The recipient app user id" },
    template: { type: "string", enum: ["short", "full"] },
    tags: { type: "array", items: { type: "string" } },
    address: {
      type: "object",
      properties: { street: { type: "string" }, zip: { type: "integer" } },
      required: ["street"],
    },
  },
  required: ["user_id"],
};
const checked = checkInputSchema(schema);
const fn: DeployedFunction = {
  name: "send_welcome_email",
  version: 1,
  url: "https://fn.example.com/x",
  mcp: { input_schema: checked },
};
const args = { user_id: "u-1", template: "full", tags: ["a", "b"], address: { street: "Main", zip: 12345 } };
const identity = { projectId: "p", userId: "u", userEmail: "u@example.com", requestId: "r" };

function perOp(run: () => unknown, iterations: number): number {
  for (let i = 0; i < iterations / 10; i++) run();
  const start = performance.now();
  for (let i = 0; i < iterations; i++) run();
  return ((performance.now() - start) * 1000) / iterations;
}

const N = 50_000;
const baseline = perOp(() => JSON.stringify(args), N);
const rows: Array<[string, number]> = [
  ["JSON.stringify(args) (baseline)", baseline],
  ["validate, cached compiled schema", perOp(() => v.safeParse(functionArgumentsSchema(fn), args), N)],
  ["validate, schema recompiled per call", perOp(() => v.safeParse(inputSchemaToValibot(checked), args), N)],
  [
    "buildUpstreamRequest (validate + headers + body)",
    perOp(() => buildUpstreamRequest(fn, identity, args), N),
  ],
  ["checkInputSchema (deploy time)", perOp(() => checkInputSchema(schema), N)],
];
for (const [label, us] of rows) {
  process.stdout.write(
    `${label.padEnd(50)} ${us.toFixed(2).padStart(7)} µs/op  ${(us / baseline).toFixed(1)}×\n`,
  );
}
