/**
 * An app's MCP surface for one request: its metadata (exposed collections and functions) and the
 * generated tools per scope. Cached in isolate memory, then KV, keyed by `(project, meta_rev)` —
 * the rev comes from the same query that authenticated the caller, so a cached copy is used only
 * when it is current and KV's eventual consistency can never serve a stale tool list.
 */
import { listCollections } from "../data/service.ts";
import type { Db } from "../db.ts";
import { loadFunctions } from "../functions/service.ts";
import type { AppMcpSettings } from "./admin.ts";
import { type AppMeta, type AppTool, buildAppTools, type Scope } from "./tools.ts";

/** The project a surface is generated for, as resolved with the credentials. */
export interface SurfaceProject {
  id: string;
  name: string;
  metaRev: number;
}

/** Where surfaces are cached across isolates (the Worker's `META_KV` namespace). */
export interface MetaStore {
  get(key: string, type: "json"): Promise<unknown>;
  put(key: string, value: string, options: { expirationTtl: number }): Promise<void>;
}

export interface AppSurface {
  meta: AppMeta;
  /** The tools of a scope, generated on first use. */
  tools(scope: Scope): AppTool[];
}

const MEMORY_LIMIT = 256;
const KV_TTL_SECONDS = 24 * 60 * 60;
const memory = new Map<string, AppSurface>();

/** Bump when the shape of `AppMeta` changes, so a deploy never reads the previous format. */
const FORMAT = 1;
const cacheKey = (projectId: string, rev: number) => `app-meta:v${FORMAT}:${projectId}:${rev}`;

function surfaceOf(meta: AppMeta): AppSurface {
  const generated = new Map<Scope, AppTool[]>();
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
  };
}

function remember(key: string, surface: AppSurface): AppSurface {
  if (memory.size >= MEMORY_LIMIT) memory.delete(memory.keys().next().value as string);
  memory.set(key, surface);
  return surface;
}

/** Reads what the developer exposed straight from Postgres. */
export async function loadAppMeta(db: Db, project: SurfaceProject, config: AppMcpSettings): Promise<AppMeta> {
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
  config: AppMcpSettings,
  waitUntil: (promise: Promise<unknown>) => void,
): Promise<AppSurface> {
  const key = cacheKey(project.id, project.metaRev);
  const hit = memory.get(key);
  if (hit) return hit;
  const stored = (await store.get(key, "json").catch(() => null)) as AppMeta | null;
  if (stored) return remember(key, surfaceOf(stored));
  const meta = await loadAppMeta(db, project, config);
  waitUntil(
    store.put(key, JSON.stringify(meta), { expirationTtl: KV_TTL_SECONDS }).catch((err: unknown) => {
      console.error("metadata cache write failed", err);
    }),
  );
  return remember(key, surfaceOf(meta));
}
