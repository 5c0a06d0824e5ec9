/**
 * An app's MCP surface for one request: its metadata (exposed collections and functions) and the
 * generated tools per scope. Cached in isolate memory, then KV, one copy per project tagged with its
 * `meta_rev` — the rev comes from the same query that authenticated the caller, so a cached copy is
 * used only when it is current and KV's eventual consistency can never serve a stale tool list.
 */
import { eq } from "drizzle-orm";
import { appMcpConfigs } from "../../schema/index.ts";
import type { CollectionMeta } from "../data/columns.ts";
import { internCollection, listCollections } from "../data/service.ts";
import type { Db } from "../db.ts";
import { notFound } from "../errors.ts";
import { loadFunctions } from "../functions/service.ts";
import { lazyModule } from "../lazy-module.ts";
import type { ToolList } from "../mcp/index.ts";
import { SizeClassedLru } from "../mcp/lru.ts";
import type { AppExposure } from "./admin.ts";
import { type AppMeta, type AppTool, buildAppTools, type Scope } from "./tools.ts";

/** The tool definitions' renderer, loaded with the first `tools/list`. */
const definitionsModule = lazyModule(() => import("./definitions.ts"));

/** The project a surface is generated for, as resolved with the credentials. */
export interface SurfaceProject {
  id: string;
  name: string;
  metaRev: number;
}

/** Where surfaces are cached across isolates (the Worker's `META_KV` namespace). */
export interface MetaStore {
  get(key: string, type: "text"): Promise<string | null>;
  put(key: string, value: string, options: { expirationTtl: number }): Promise<void>;
}

export interface AppSurface {
  meta: AppMeta;
  /** The tools of a scope, generated on first use. */
  tools(scope: Scope): AppTool[];
  /** One tool of a scope by name (an index built once per (rev, scope): a call does not scan 7 × N tools). */
  tool(scope: Scope, name: string): AppTool | undefined;
  /**
   * The tool definitions of a scope: one list per (rev, scope), so tools/list reuses its pages
   * (serialised, within their own budget: `RAW_PAGES_BUDGET_CHARS` in src/mcp/server.ts); a page
   * builds only its own tools' definitions, and keeps none of them. The definition builders
   * (src/app-mcp/definitions.ts, with `@valibot/to-json-schema`) are imported by the first call:
   * only tools/list needs them. Each tool's weight (`definitionWeight`) is read from the metadata,
   * so a page ends at `TOOLS_PAGE_WEIGHT` before any definition is built.
   */
  definitions(scope: Scope): Promise<ToolList>;
}

/**
 * Characters of metadata JSON the isolate keeps surfaces (and, separately, REST collection lists)
 * for. Weighed, not counted: one project's metadata may be megabytes (1,000 collections, 100
 * columns with 500-character descriptions), and its objects, tools and per-collection schemas take
 * several times its JSON. Least recently used first out; a project over its class's share alone
 * (`METADATA_CLASSES`: 3 MiB) is loaded per request (from KV, then Postgres).
 */
export const METADATA_BUDGET_CHARS = 4 * 1024 * 1024;
/**
 * How that budget is shared: apps of up to 32 KiB of metadata (most: a dozen collections of
 * described columns) keep a quarter of it among themselves, and larger apps the rest. In one
 * budget, two apps of 2 MiB called in turn pushed out every other app's copy with each load; now
 * a load of a large app evicts only large ones, and emptying the small apps' share takes 32
 * loads of distinct apps of 32 KiB (`SizeClassedLru`).
 */
const METADATA_CLASSES = {
  smallMax: 32 * 1024,
  smallBudget: METADATA_BUDGET_CHARS / 4,
  largeBudget: (METADATA_BUDGET_CHARS * 3) / 4,
};
const KV_TTL_SECONDS = 24 * 60 * 60;
/**
 * Deadline of one cache read. The cache only saves a database round trip, so a read that fails or
 * takes longer than this is a miss: the request goes on to Postgres instead of waiting on KV.
 */
export const KV_READ_DEADLINE_MS = 1_000;

/**
 * `store.get(key)` as text (its length weighs the entry in memory), or null when it fails or has not
 * answered within {@link KV_READ_DEADLINE_MS}.
 */
export async function cachedRead(
  store: MetaStore,
  key: string,
  deadlineMs = KV_READ_DEADLINE_MS,
): Promise<string | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), deadlineMs);
  });
  try {
    return await Promise.race([store.get(key, "text").catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}
/** A cached value of one `meta_rev` and the characters of the JSON it was read from. */
interface Weighed<T> {
  value: T;
  rev: number;
  chars: number;
}

/**
 * Isolate memory holds one surface per project, its newest rev: a surface of an older rev is never
 * used again once a newer one is loaded. Keyed by (project, rev), every `meta_rev` bump of one app
 * (a control-plane write each, up to 20 a second) left another copy of its metadata behind, so one
 * developer looping over exposure changes and `tools/list` pushed every other app's surface out.
 */
const memory = new SizeClassedLru<string, Weighed<AppSurface>>(METADATA_CLASSES, (e) => e.chars);

/** The entry of `projectId` in a per-project memory cache when it holds `rev`. */
function currentEntry<T extends { rev: number }>(
  lru: SizeClassedLru<string, T>,
  projectId: string,
  rev: number,
) {
  const entry = lru.get(projectId);
  return entry?.rev === rev ? entry : undefined;
}

/** Keep `entry` for its project unless a newer rev is kept already (a request with older credentials). */
function keepNewest<T extends { rev: number }>(
  lru: SizeClassedLru<string, T>,
  projectId: string,
  entry: T,
): void {
  const kept = lru.get(projectId);
  if (!kept || kept.rev <= entry.rev) lru.set(projectId, entry);
}

/** Bump when the shape of `AppMeta` changes, so a deploy never reads the previous format. */
const FORMAT = 2;
const cacheKey = (projectId: string) => `app-meta:v${FORMAT}:${projectId}`;

/**
 * KV keeps one value per project (`<rev>\n<json>`), overwritten by the next rev and read only when
 * its rev is the caller's. Keyed by (project, rev), every `meta_rev` bump followed by one
 * `tools/list` left a copy of the app's metadata (up to megabytes) in KV for a day: one developer's
 * loop of exposure changes (20 a second) stored hundreds of GB a day at the operator's expense. A
 * value of another rev — an older one KV still serves, or a newer one a request with older
 * credentials meets — is a miss, so a stale copy is still never used.
 */
async function readAtRev(store: MetaStore, key: string, rev: number): Promise<KvRead> {
  const stored = await cachedRead(store, key);
  const newline = stored?.indexOf("\n") ?? -1;
  if (!stored || newline < 1) return { text: null, newer: false };
  const storedRev = Number(stored.slice(0, newline));
  return storedRev === rev
    ? { text: stored.slice(newline + 1), newer: false }
    : { text: null, newer: storedRev > rev };
}

/** A KV read at a rev: the JSON when KV holds that rev; `newer` when it holds a later one. */
interface KvRead {
  text: string | null;
  newer: boolean;
}

/**
 * Write `text` as `key`'s value at `rev`, after the response, unless KV holds a later rev already (a
 * request with older credentials); a failed write is only logged.
 */
function writeAtRev(
  store: MetaStore,
  key: string,
  read: KvRead,
  rev: number,
  text: string,
  waitUntil: (promise: Promise<unknown>) => void,
): void {
  if (read.newer) return;
  waitUntil(
    store.put(key, `${rev}\n${text}`, { expirationTtl: KV_TTL_SECONDS }).catch((err: unknown) => {
      console.error(`metadata cache write failed (${key})`, err);
    }),
  );
}

function surfaceOf(meta: AppMeta): AppSurface {
  const generated = new Map<Scope, AppTool[]>();
  const definitions = new Map<Scope, Promise<ToolList>>();
  const indexes = new Map<Scope, Map<string, AppTool>>();
  return {
    meta,
    tools(scope) {
      let tools = generated.get(scope);
      if (!tools) {
        tools = buildAppTools(meta, scope);
        generated.set(scope, tools);
      }
      return tools;
    },
    tool(scope, name) {
      let index = indexes.get(scope);
      if (!index) {
        index = new Map(this.tools(scope).map((t) => [t.name, t]));
        indexes.set(scope, index);
      }
      return index.get(name);
    },
    definitions(scope) {
      let list = definitions.get(scope);
      if (!list) {
        const tools = this.tools(scope);
        list = definitionsModule().then(({ toolDefinition, definitionWeight }) => ({
          length: tools.length,
          slice: (start, end) => tools.slice(start, end).map((tool) => toolDefinition(tool, meta, scope)),
          weight: (index) => definitionWeight(tools[index]!, meta),
        }));
        definitions.set(scope, list);
      }
      return list;
    },
  };
}

function remember(project: SurfaceProject, meta: AppMeta, chars: number): AppSurface {
  const surface = surfaceOf(meta);
  keepNewest(memory, project.id, { value: surface, rev: project.metaRev, chars });
  return surface;
}

/**
 * The names `projectId` exposes, read on their own: the credential resolution the request came with
 * is cached without them (`AppMcpRuntime`), and a surface is loaded from Postgres only when neither
 * isolate memory nor KV holds its rev.
 */
async function loadExposure(db: Db, projectId: string): Promise<AppExposure> {
  const [row] = await db
    .select({
      exposedCollections: appMcpConfigs.exposedCollections,
      exposedFunctions: appMcpConfigs.exposedFunctions,
    })
    .from(appMcpConfigs)
    .where(eq(appMcpConfigs.projectId, projectId));
  return row ?? { exposedCollections: [], exposedFunctions: [] };
}

/** Reads what the developer exposed straight from Postgres. */
export async function loadAppMeta(db: Db, project: SurfaceProject, config: AppExposure): Promise<AppMeta> {
  const exposedCollections = new Set(config.exposedCollections);
  const exposedFunctions = new Set(config.exposedFunctions);
  const [collections, functions] = await Promise.all([
    config.exposedCollections.length ? listCollections(db, project.id) : [],
    config.exposedFunctions.length ? loadFunctions(db, project.id) : [],
  ]);
  return {
    projectId: project.id,
    projectName: project.name,
    metaRev: project.metaRev,
    collections: collections.filter((c) => exposedCollections.has(c.name)),
    functions: functions.filter((f) => exposedFunctions.has(f.name)),
  };
}

/** The current surface of `project`: memory → KV → Postgres. */
export async function appSurface(
  store: MetaStore,
  db: Db,
  project: SurfaceProject,
  waitUntil: (promise: Promise<unknown>) => void,
): Promise<AppSurface> {
  const hit = currentEntry(memory, project.id, project.metaRev);
  if (hit) return hit.value;
  const key = cacheKey(project.id);
  const read = await readAtRev(store, key, project.metaRev);
  if (read.text) {
    // Interned like metadata read from Postgres: the definitions of an unchanged collection are
    // then reused across revs (src/app-mcp/definitions.ts).
    const meta = JSON.parse(read.text) as AppMeta;
    return remember(
      project,
      { ...meta, collections: meta.collections.map(internCollection) },
      read.text.length,
    );
  }
  const meta = await loadAppMeta(db, project, await loadExposure(db, project.id));
  const text = JSON.stringify(meta);
  writeAtRev(store, key, read, project.metaRev, text, waitUntil);
  return remember(project, meta, text.length);
}

const collectionMemory = new SizeClassedLru<string, Weighed<Map<string, CollectionMeta>>>(
  METADATA_CLASSES,
  (e) => e.chars,
);
const collectionsKey = (projectId: string) => `collections:v${FORMAT}:${projectId}`;

/**
 * One collection's metadata for the REST data routes, from the same cache scheme as the surface
 * (every collection of the project, not only the exposed ones): memory → KV → Postgres, used at the
 * `meta_rev` of the authenticating query only. 404 for an unknown collection.
 */
export async function projectCollection(
  store: MetaStore,
  db: Db,
  project: SurfaceProject,
  name: string,
  waitUntil: (promise: Promise<unknown>) => void,
): Promise<CollectionMeta> {
  let byName = currentEntry(collectionMemory, project.id, project.metaRev)?.value;
  if (!byName) {
    const key = collectionsKey(project.id);
    const read = await readAtRev(store, key, project.metaRev);
    let text = read.text;
    let list: CollectionMeta[];
    if (text) list = (JSON.parse(text) as CollectionMeta[]).map(internCollection);
    else {
      list = await listCollections(db, project.id);
      text = JSON.stringify(list);
      writeAtRev(store, key, read, project.metaRev, text, waitUntil);
    }
    byName = new Map(list.map((meta) => [meta.name, meta]));
    keepNewest(collectionMemory, project.id, { value: byName, rev: project.metaRev, chars: text.length });
  }
  const meta = byName.get(name);
  if (!meta) throw notFound(`collection "${name}" not found`);
  return meta;
}
