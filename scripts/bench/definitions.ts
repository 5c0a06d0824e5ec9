/**
 * `npm run bench -- definitions`: the pure part of a `tools/list` page in a fresh isolate — building
 * a collection's operation schemas and each of its tool definitions (valibot → JSON Schema, shaped)
 * — for a collection of 100 text columns, the widest there is, as ratios against serialising the
 * definitions built (`JSON.stringify`, which a served page pays anyway). Nothing is cached between
 * operations: every operation gets a metadata object of its own (the caches are keyed by it), as
 * after a change to the collection. Median of `BENCH_ROUNDS` (default 15) rounds of `BENCH_N`
 * (default 20) operations each. The `cpuworst` bench measures the same work in workerd, per request.
 */
import { appToolDefinitions } from "../../src/app-mcp/definitions.ts";
import type { AppMeta } from "../../src/app-mcp/tools.ts";
import type { CollectionMeta } from "../../src/data/columns.ts";
import { buildOperationSchemas } from "../../src/data/schemas.ts";

const N = Number(process.env.BENCH_N ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const COLUMNS = 100;

let edits = 0;
/** A fresh 100-column collection (its first column's description differs each time). */
function wide(): CollectionMeta {
  edits++;
  return {
    projectId: "00000000-0000-4000-8000-000000000000",
    name: "wide",
    columns: Array.from({ length: COLUMNS }, (_, i) => ({
      name: `c${i}`,
      type: "text" as const,
      ...(i === 0 ? { description: `edit ${edits}` } : {}),
    })),
    access: { read: "public", write: "owner" },
  };
}
const app = (collection: CollectionMeta): AppMeta => ({
  projectId: collection.projectId,
  projectName: "Wide app",
  metaRev: edits,
  collections: [collection],
  functions: [],
});

/** Median µs per operation over the rounds (each round after one untimed warm-up round). */
function perOp(run: () => unknown): number {
  const rounds: number[] = [];
  for (let r = 0; r <= ROUNDS; r++) {
    const start = performance.now();
    for (let i = 0; i < N; i++) run();
    if (r > 0) rounds.push(((performance.now() - start) * 1000) / N);
  }
  rounds.sort((a, b) => a - b);
  return rounds[Math.floor(rounds.length / 2)] as number;
}

const built = appToolDefinitions(app(wide()), "developer");
const rows: Array<[string, number]> = [
  ["JSON.stringify of the 9 definitions built (baseline)", perOp(() => JSON.stringify(built))],
  [`buildOperationSchemas, ${COLUMNS} text columns`, perOp(() => buildOperationSchemas(wide()))],
  [
    "every tool definition, developer scope (schemas included)",
    perOp(() => appToolDefinitions(app(wide()), "developer")),
  ],
  [
    "every tool definition, end-user scope (schemas included)",
    perOp(() => appToolDefinitions(app(wide()), "end_user")),
  ],
];
const [, baseline] = rows[0] as [string, number];
console.log(
  `definitions of one collection of ${COLUMNS} text columns, ${JSON.stringify(built).length} characters`,
);
for (const [label, us] of rows) {
  console.log(`${label.padEnd(62)} ${us.toFixed(1).padStart(9)} µs/op  ${(us / baseline).toFixed(1)}×`);
}
