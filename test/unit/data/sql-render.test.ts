/**
 * The rendering fast path (`flat`, used by every row read) walks drizzle internals; these properties
 * pin it to drizzle's own rendering: for generated statements built by the module's public
 * builders — where trees, orders, keyset cursors, owner filters, limits — `flat(q)` renders to
 * exactly the SQL text and parameters `PgDialect.sqlToQuery(q)` renders.
 */
import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CollectionMeta,
  type ColumnSpec,
  type ColumnType,
  isValidValue,
} from "../../../src/data/columns.ts";
import { operatorsFor, orderOptions, visibleColumns } from "../../../src/data/schemas.ts";
import {
  compileWhere,
  flat,
  keysetCondition,
  notDeleted,
  orderBy,
  ownedBy,
  parseOrder,
  selectById,
  selectPage,
  tableRef,
} from "../../../src/data/sql.ts";

const dialect = new PgDialect();
const render = (q: SQL) => dialect.sqlToQuery(q);

const COLUMNS: ColumnSpec[] = [
  { name: "title", type: "text", required: true },
  { name: "note", type: "text" },
  { name: "calories", type: "integer" },
  { name: "big", type: "bigint" },
  { name: "price", type: "number" },
  { name: "vegan", type: "boolean" },
  { name: "served_at", type: "timestamp" },
  { name: "day", type: "date" },
  { name: "meta", type: "json" },
  { name: "ref", type: "uuid" },
  { name: "tags", type: "text[]" },
  { name: "scores", type: "integer[]" },
  { name: "embedding", type: "vector", dimensions: 3 },
];
const META: CollectionMeta = {
  projectId: "0190f2a4-aaaa-4bbb-8ccc-0123456789ab",
  name: "dishes",
  columns: COLUMNS,
  access: { read: "owner", write: "owner" },
};

const instant = fc.date({ min: new Date("1970-01-01"), max: new Date("2100-01-01"), noInvalidDate: true });

/** A valid scalar value of a column type (null allowed where a value may be null). */
function scalar(type: ColumnType): fc.Arbitrary<unknown> {
  switch (type) {
    case "text":
      return fc.string();
    case "integer":
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    case "bigint":
      return fc.oneof(fc.maxSafeInteger(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String));
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "timestamp":
      return instant.map((d) => d.toISOString());
    case "date":
      return instant.map((d) => d.toISOString().slice(0, 10));
    case "uuid":
      return fc.uuid();
    case "json":
      return fc.jsonValue();
    default:
      return fc.string();
  }
}

const elementOf = (type: ColumnType): ColumnType => type.replace("[]", "") as ColumnType;

/** One `{column: value}` or `{column: {operator: operand}}` condition of the where language. */
const leaf: fc.Arbitrary<Record<string, unknown>> = fc.constantFrom(...visibleColumns(META)).chain((column) =>
  fc.constantFrom(...operatorsFor(column)).chain((op): fc.Arbitrary<Record<string, unknown>> => {
    const type = column.type;
    const isArray = type.endsWith("[]");
    let operand: fc.Arbitrary<unknown>;
    if (op === "is_null") operand = fc.boolean();
    else if (op === "in" || op === "nin") operand = fc.array(scalar(type), { maxLength: 4 });
    else if (op === "like" || op === "ilike" || op === "starts_with" || op === "has_key")
      operand = fc.string();
    else if (isArray) operand = fc.array(scalar(elementOf(type)), { maxLength: 4 });
    else operand = fc.oneof(scalar(type), fc.constant(null));
    return operand.chain((value) =>
      op === "eq" && value !== null
        ? fc.constantFrom({ [column.name]: value }, { [column.name]: { eq: value } })
        : fc.constant({ [column.name]: { [op]: value } }),
    );
  }),
);

const where = fc.letrec<{ node: Record<string, unknown> }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("node"), { minLength: 1, maxLength: 3 }).map((list) => ({ and: list })),
    fc.array(tie("node"), { minLength: 1, maxLength: 3 }).map((list) => ({ or: list })),
    tie("node").map((inner) => ({ not: inner })),
  ),
})).node;

const order = fc.constantFrom(...orderOptions(META)).map((o) => parseOrder(META, o));

/** A cursor position valid for `o`: the column's value (or null when nullable) and an id. */
const positionFor = (o: ReturnType<typeof parseOrder>) =>
  fc.record({
    order: fc.constant(o.signature),
    value: (o.column.required
      ? scalar(o.column.type)
      : fc.oneof(scalar(o.column.type), fc.constant(null))
    ).filter((v) => v === null || isValidValue(o.column.type, v)),
    id: fc.uuid(),
  });

/** Conditions as the data service combines them: not deleted, owner, where, keyset. */
const conditions = fc
  .record({
    owner: fc.option(fc.uuid(), { nil: undefined }),
    where: fc.option(where, { nil: undefined }),
    order,
  })
  .chain(({ owner, where: w, order: o }) =>
    fc.option(positionFor(o), { nil: undefined }).map((position) => ({
      order: o,
      list: [
        notDeleted,
        ...(owner ? [ownedBy(owner)] : []),
        ...(w ? [compileWhere(META, w as never)] : []),
        ...(position ? [keysetCondition(o, position)] : []),
      ],
    })),
  );

const limit = fc.integer({ min: 1, max: 1001 });

describe("flat (the rendering fast path)", () => {
  it("renders generated where / order / keyset / limit statements exactly as drizzle does", () => {
    fc.assert(
      fc.property(conditions, limit, ({ list, order: o }, n) => {
        const query = sql`SELECT t.* FROM ${tableRef(META)} AS t WHERE ${sql.join(list, sql` AND `)} ORDER BY ${orderBy(o)} LIMIT ${n}`;
        expect(render(flat(query))).toEqual(render(query));
      }),
      { numRuns: 500 },
    );
  });

  it("renders single conditions exactly as drizzle does", () => {
    fc.assert(
      fc.property(where, (w) => {
        const condition = compileWhere(META, w as never);
        expect(render(flat(condition))).toEqual(render(condition));
      }),
      { numRuns: 500 },
    );
  });

  it("renders arbitrary parameter values (or leaves the statement to drizzle) like drizzle", () => {
    const value = fc.oneof(
      fc.string(),
      fc.double(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.array(fc.integer(), { maxLength: 3 }),
      instant,
    );
    fc.assert(
      fc.property(fc.array(value, { maxLength: 6 }), fc.boolean(), (values, inline) => {
        const parts = values.map((v, i) => sql`${sql.identifier(`c${i}`)} = ${v}`);
        const body = sql`SELECT 1 WHERE ${sql.join(parts, sql` AND `)}`;
        const query = inline ? sql`${body}`.inlineParams() : sql`(${body})`;
        expect(render(flat(query))).toEqual(render(query));
      }),
      { numRuns: 300 },
    );
  });

  it("the page and by-id statements carry the conditions' parameters in order, then the limit", () => {
    fc.assert(
      fc.property(conditions, limit, fc.uuid(), ({ list, order: o }, n, id) => {
        const where = render(sql.join(list, sql` AND `));
        const page = render(selectPage(META, list, o, n));
        expect(page.params).toEqual([...where.params, n]);
        expect(page.sql).toContain(`ORDER BY ${render(orderBy(o)).sql} LIMIT $${where.params.length + 1}`);
        expect(render(selectById(META, id, list)).params).toEqual([id, ...where.params]);
      }),
      { numRuns: 300 },
    );
  });
});
