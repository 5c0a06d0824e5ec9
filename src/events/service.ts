/**
 * Events an app's client code sends (`POST /v1/events`) and the developer lists
 * (`GET /v1/admin/projects/:id/events`). An event is a name, optional JSON properties and when it
 * happened; a request carries one or a batch of up to {@link MAX_EVENTS_PER_REQUEST}, stored in one
 * statement (all or none) and counted as that many `events` in the usage counters only once stored.
 * The body's size, nesting and string limits are the request's own (src/worker/request.ts,
 * src/limits.ts), checked before it is parsed or validated; the limits here are an event's.
 *
 * Events count in their project's storage quota (src/data/storage-quota.ts): each stored event keeps
 * its size (`size_bytes`, {@link EVENT_ROW_OVERHEAD_BYTES} plus its name and properties), the
 * statement that stores events adds their sizes to the project's `app_event_bytes` and the one that
 * deletes them ({@link deleteEvents}) subtracts theirs, so the counter is the table's sum without a
 * scan and without a round trip of its own. Ingest is refused while the project is over its quota.
 */
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { decodeCursor, encodeCursor } from "../data/cursor.ts";
import { appSlots } from "../data/service.ts";
import { noteStorageFreed, type StorageGuard } from "../data/storage-quota.ts";
import { uuidv7 } from "../data/uuid7.ts";
import type { Db } from "../db.ts";
import { invalidInput, notFound } from "../errors.ts";
import { jsonNestingExceeds } from "../mcp/json-text.ts";
import type { Meter } from "../usage/metering.ts";
import { parseInput } from "../validate.ts";

/** Events one request may carry. */
export const MAX_EVENTS_PER_REQUEST = 100;
/** Bytes of an event's properties, as JSON (UTF-8). */
export const MAX_PROPERTIES_BYTES = 8 * 1024;
/** Levels of nesting of an event's properties (the properties object itself is level 1). */
export const MAX_PROPERTIES_DEPTH = 8;
/** How far past the server's clock a client's `timestamp` may be (clock skew, not the future). */
export const MAX_TIMESTAMP_AHEAD_MS = 24 * 60 * 60 * 1000;
/** The earliest `timestamp` taken: a device whose clock was reset reports 1970. */
export const MIN_TIMESTAMP = "2000-01-01T00:00:00Z";

/**
 * What an event counts in its project's storage quota besides its name's and properties' bytes
 * (`octet_length(name) + octet_length(properties::text)`): about what Postgres stores per row
 * besides those — tuple header and line pointer (28), the fixed-width columns (68: three uuids, two
 * timestamps, the size), the varlena headers, and the entries of the two indexes (≈ 44 each, plus
 * the name again in one) — rounded up. A constant so that the size stored with an event is the size
 * its delete subtracts (migration 0016 sized the events stored before it with the same 200).
 */
export const EVENT_ROW_OVERHEAD_BYTES = 200;

/** Events one `DELETE …/events` request deletes at most (oldest first); `more` says whether others match. */
export const MAX_EVENTS_DELETED = 10_000;

/**
 * Counter rows per project in `app_event_bytes`: each statement adds to (or subtracts from) a random
 * one, so concurrent ingests of one project rarely wait on one row lock; the storage measurement sums them.
 */
export const EVENT_BYTE_SHARDS = 16;

/** The size expression of an event row (`name` and `properties` of `alias`), as stored in `size_bytes`. */
const sizeOf = (alias: string) =>
  sql.raw(
    `(octet_length(${alias}.name) + octet_length(${alias}.properties::text) + ${EVENT_ROW_OVERHEAD_BYTES})`,
  );

/** Adds `bytes` (a column of `source`) to the project's event-byte counter, in one random shard row. */
const countBytes = (projectId: string, source: string, sign: "" | "-") =>
  sql`insert into app_event_bytes (project_id, shard, bytes)
      select ${projectId}::uuid, ${Math.floor(Math.random() * EVENT_BYTE_SHARDS)}::smallint,
        ${sql.raw(sign)}sum(size_bytes) from ${sql.raw(source)} having count(*) > 0
      on conflict (project_id, shard) do update set bytes = app_event_bytes.bytes + excluded.bytes`;

/** Event names: a letter, then letters, digits, `_`, `.`, `:`, `-`; 1–128 characters. */
const EVENT_NAME = /^[A-Za-z][A-Za-z0-9_.:-]{0,127}$/;
const NAME_RULE = "must be 1–128 characters: a letter, then letters, digits, _ . : -";

/** ISO-8601 date-time with a time zone (`Z` or `±hh:mm`): a local time is ambiguous. */
const ISO_DATE_TIME =
  /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

const EventNameSchema = v.pipe(
  v.string(),
  v.regex(EVENT_NAME, NAME_RULE),
  v.description(`The event name, which ${NAME_RULE}.`),
);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const LONE_SURROGATE = /\p{Cs}/u;

/** Whether a string or key anywhere in `value` holds a lone UTF-16 surrogate (no UTF-8 form: jsonb refuses it). */
function holdsLoneSurrogate(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") {
      if (LONE_SURROGATE.test(item)) return true;
    } else if (Array.isArray(item)) stack.push(...item);
    else if (isObject(item)) {
      for (const [key, member] of Object.entries(item)) {
        if (LONE_SURROGATE.test(key)) return true;
        stack.push(member);
      }
    }
  }
  return false;
}

/** What is wrong with an event's properties (already within the request's limits), or null. */
function propertiesProblem(properties: Record<string, unknown>): string | null {
  const text = JSON.stringify(properties);
  if (jsonNestingExceeds(text, MAX_PROPERTIES_DEPTH))
    return `nested deeper than ${MAX_PROPERTIES_DEPTH} levels`;
  const bytes = new TextEncoder().encode(text).byteLength;
  if (bytes > MAX_PROPERTIES_BYTES) return `${bytes} bytes as JSON, more than ${MAX_PROPERTIES_BYTES}`;
  if (holdsLoneSurrogate(properties))
    return "text must be well-formed Unicode (a lone UTF-16 surrogate has no UTF-8 form)";
  return null;
}

const PropertiesSchema = v.pipe(
  // Not `v.record`: its output leaves out keys named `__proto__`, `constructor` and `prototype`, so
  // such properties were accepted and silently not stored.
  v.custom<Record<string, unknown>>(isObject, "must be a JSON object"),
  v.rawCheck<Record<string, unknown>>(({ dataset, addIssue }) => {
    const problem = dataset.typed ? propertiesProblem(dataset.value) : null;
    if (problem) addIssue({ message: problem });
  }),
  v.description(
    `A JSON object: at most ${MAX_PROPERTIES_BYTES} bytes as JSON, nested at most ${MAX_PROPERTIES_DEPTH} levels.`,
  ),
);

/** The instant of an ISO-8601 date-time, or null when it names no real one (2026-02-30). */
function instantOf(text: string): number | null {
  const match = ISO_DATE_TIME.exec(text);
  if (!match) return null;
  const [, year, month, day] = match.map(Number) as [number, number, number, number];
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return null;
  const at = Date.parse(text);
  return Number.isFinite(at) ? at : null;
}

/** What is wrong with a `timestamp`, or null. */
function timestampProblem(text: string): string | null {
  const at = instantOf(text);
  if (at === null) return "must be an ISO-8601 date-time with a time zone (2026-12-01T12:00:00Z)";
  if (at < Date.parse(MIN_TIMESTAMP)) return `must not be before ${MIN_TIMESTAMP}`;
  if (at > Date.now() + MAX_TIMESTAMP_AHEAD_MS)
    return "must not be more than 24 hours ahead of the server's clock";
  return null;
}

const TimestampSchema = v.pipe(
  v.string(),
  v.rawCheck<string>(({ dataset, addIssue }) => {
    const problem = dataset.typed ? timestampProblem(dataset.value) : null;
    if (problem) addIssue({ message: problem });
  }),
  v.description(
    `When it happened: ISO-8601 with a time zone, from ${MIN_TIMESTAMP} to 24 hours past the server's clock; default when received.`,
  ),
);

/** One event as sent. */
export const EventSchema = v.strictObject({
  name: EventNameSchema,
  properties: v.optional(PropertiesSchema),
  timestamp: v.optional(TimestampSchema),
});
export type EventInput = v.InferOutput<typeof EventSchema>;

/** A batch: `{events: [...]}`, 1 to {@link MAX_EVENTS_PER_REQUEST}. */
export const EventBatchSchema = v.strictObject({
  events: v.pipe(
    v.array(EventSchema),
    v.minLength(1, "must hold at least one event"),
    v.maxLength(MAX_EVENTS_PER_REQUEST, `must hold at most ${MAX_EVENTS_PER_REQUEST} events`),
  ),
});

/** `POST /v1/events`: one event, or `{events: [...]}` (told apart by the `events` key). */
export const IngestSchema = v.union([EventSchema, EventBatchSchema]);

/**
 * Who sent events: the client key's project, and the end user when a session came with it; the
 * project's developer, whose database slots the insert runs in (src/data/app-slots.ts).
 */
export interface EventSender {
  projectId: string;
  developerId: string;
  userId: string | null;
}

/** The events of a body (the schema the `events` key selects), or a 400 naming the field. */
export function parseEvents(body: unknown): EventInput[] {
  if (isObject(body) && "events" in body) return parseInput(EventBatchSchema, body).events;
  return [parseInput(EventSchema, body)];
}

/**
 * Validate and store a body's events (all or none: one statement, in one of the app's database
 * slots, which also adds their sizes to the project's event bytes), then count them as `events`.
 * Ids are UUIDv7 in the order sent. 400 for any invalid event (nothing stored or counted); 403
 * `quota_exceeded` while the project is over its storage quota (`storage`: no round trip); 404
 * when the project is gone (deleted after its key was resolved).
 */
export async function ingestEvents(
  db: Db,
  meter: Meter,
  storage: StorageGuard,
  sender: EventSender,
  body: unknown,
): Promise<{ accepted: number; ids: string[] }> {
  const events = parseEvents(body);
  storage(sender.projectId, "events");
  const rows = events.map((event) => ({
    id: uuidv7(),
    name: event.name,
    properties: event.properties ?? {},
    // Normalised to UTC here, so the database is given only instants this module has checked.
    occurred_at: event.timestamp === undefined ? null : new Date(Date.parse(event.timestamp)).toISOString(),
  }));
  // In one of the app's database slots, as its row statements are (src/data/app-slots.ts: its
  // developer's, shared by their apps): its events and its data calls together hold at most that
  // many backends from one isolate.
  const insert = sql`
    with stored as (
      insert into app_events (id, project_id, name, properties, user_id, occurred_at, size_bytes)
      select e.id, ${sender.projectId}::uuid, e.name, e.properties, ${sender.userId}::uuid,
        coalesce(e.occurred_at, now()), ${sizeOf("e")}
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        as e(id uuid, name text, properties jsonb, occurred_at timestamptz)
      where exists (select 1 from projects p where p.id = ${sender.projectId}::uuid)
      returning size_bytes
    ), counted as (${countBytes(sender.projectId, "stored", "")})
    select count(*)::int as n from stored`;
  const result = await appSlots.run(sender.developerId, () => db.execute(insert));
  const stored = Number((result.rows[0] as { n: number | string } | undefined)?.n ?? 0);
  if (stored !== rows.length) throw notFound("project not found");
  meter(sender.projectId, "events", stored);
  return { accepted: stored, ids: rows.map((row) => row.id) };
}

/** An event as the developer reads it. */
export interface EventView {
  id: string;
  name: string;
  properties: Record<string, unknown>;
  user_id: string | null;
  occurred_at: string;
  received_at: string;
}

/** Events per page by default, and at most. */
export const DEFAULT_EVENTS_PAGE = 50;
export const MAX_EVENTS_PAGE = 100;

/** The order signature a listing cursor carries (a cursor from a collection is refused). */
const EVENTS_ORDER = "events:id desc";

/** `GET …/events?limit=&cursor=&name=`, as query strings (absent or empty = not given). */
export interface EventsQuery {
  limit?: string;
  cursor?: string;
  name?: string;
}

/** The last event id of the page a `next_cursor` ended; 400 for anything else. */
function cursorId(cursor: string): string {
  try {
    return decodeCursor(cursor, EVENTS_ORDER).id;
  } catch {
    throw invalidInput("cursor: not a next_cursor of this listing; start again without a cursor");
  }
}

/** A page of a project's events, newest first; `next_cursor` null on the last page. */
export async function listEvents(
  db: Db,
  projectId: string,
  query: EventsQuery,
): Promise<{ events: EventView[]; next_cursor: string | null }> {
  const limit = query.limit ? Number(query.limit) : DEFAULT_EVENTS_PAGE;
  if (!/^\d+$/.test(query.limit || "1") || limit < 1 || limit > MAX_EVENTS_PAGE)
    throw invalidInput(`limit: an integer from 1 to ${MAX_EVENTS_PAGE}`);
  if (query.name && !EVENT_NAME.test(query.name)) throw invalidInput(`name: ${NAME_RULE}`);
  const after = query.cursor ? cursorId(query.cursor) : null;
  const utc = (column: string) =>
    sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);
  const result = await db.execute(sql`
    select id::text as id, name, properties, user_id::text as user_id,
      ${utc("occurred_at")} as occurred_at, ${utc("received_at")} as received_at
    from app_events
    where project_id = ${projectId}::uuid
      ${query.name ? sql`and name = ${query.name}::text` : sql``}
      ${after ? sql`and id < ${after}::uuid` : sql``}
    order by id desc
    limit ${limit + 1}::int`);
  const events = (result.rows as unknown as EventView[]).map((row) => ({
    ...row,
    properties: typeof row.properties === "string" ? JSON.parse(row.properties) : row.properties,
  }));
  if (events.length <= limit) return { events, next_cursor: null };
  events.length = limit;
  const last = events[limit - 1] as EventView;
  return { events, next_cursor: encodeCursor({ order: EVENTS_ORDER, value: null, id: last.id }) };
}

/** `DELETE …/events?before=&name=`, as query strings (absent or empty = not given). */
export interface DeleteEventsQuery {
  before?: string;
  name?: string;
}

/**
 * The smallest UUIDv7 of the millisecond `at`: every id minted before it sorts below (ids are
 * compared as bytes, and a UUIDv7 starts with its 48-bit millisecond). Clamped to the 48 bits.
 */
function firstIdOf(at: number): string {
  const ms = Math.min(Math.max(Math.floor(at), 0), 2 ** 48 - 1);
  const h = ms.toString(16).padStart(12, "0");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * Delete the project's events received before `before` (by the time in their UUIDv7 id, minted
 * when the Worker received them) and, with `name`, only those of that name: the oldest
 * {@link MAX_EVENTS_DELETED} at most, in one statement that also subtracts their sizes from the
 * project's event bytes (so the counter never drifts, whatever runs at the same time), in one of the
 * app's database slots (its developer's). `more`: whether matching events are left (ask again). The isolate's storage
 * gauge learns the freed bytes at once (src/data/storage-quota.ts); other isolates at their next
 * measurement.
 */
export async function deleteEvents(
  db: Db,
  project: { id: string; developerId: string },
  query: DeleteEventsQuery,
): Promise<{ deleted: number; more: boolean; freed_bytes: number }> {
  const projectId = project.id;
  const at = query.before ? instantOf(query.before) : null;
  if (at === null)
    throw invalidInput(
      "before: required, an ISO-8601 date-time with a time zone (2026-12-01T12:00:00Z); events received before it are deleted",
    );
  if (query.name && !EVENT_NAME.test(query.name)) throw invalidInput(`name: ${NAME_RULE}`);
  const statement = sql`
    with candidates as (
      select id from app_events
      where project_id = ${projectId}::uuid and id < ${firstIdOf(at)}::uuid
        ${query.name ? sql`and name = ${query.name}::text` : sql``}
      order by id
      limit ${MAX_EVENTS_DELETED + 1}::int
    ), deleted as (
      delete from app_events
      where project_id = ${projectId}::uuid
        and id in (select id from candidates order by id limit ${MAX_EVENTS_DELETED}::int)
      returning size_bytes
    ), freed as (${countBytes(projectId, "deleted", "-")})
    select (select count(*) from deleted)::int as deleted,
      (select coalesce(sum(size_bytes), 0) from deleted)::bigint as freed,
      (select count(*) from candidates)::int > ${MAX_EVENTS_DELETED}::int as more`;
  const result = await appSlots.run(project.developerId, () => db.execute(statement), true);
  const row = result.rows[0] as { deleted: number | string; freed: number | string; more: boolean | string };
  const freed = Number(row.freed);
  if (freed > 0) noteStorageFreed(projectId, freed);
  return { deleted: Number(row.deleted), more: row.more === true || row.more === "t", freed_bytes: freed };
}
