/**
 * Database access for the Worker: drizzle over the Neon serverless HTTP driver. When `LOCAL_DB_URL`
 * is set (`npm run dev`, tests) the driver's fetch endpoint points at the local Neon-protocol
 * endpoint; nothing else in the Worker knows which one it talks to.
 */
import { neon, neonConfig } from "@neondatabase/serverless";
import { drizzle } from "drizzle-orm/neon-http";
import * as schema from "../../schema/index.ts";
import type { Env } from "./env.ts";

export type Db = ReturnType<typeof connect>;

const connect = (url: string) => drizzle({ client: neon(url), schema });

const cache = new Map<string, Db>();

/** One drizzle instance per (connection string, endpoint) per isolate. */
export function createDb(env: Pick<Env, "DATABASE_URL" | "LOCAL_DB_URL">): Db {
  const key = `${env.DATABASE_URL}|${env.LOCAL_DB_URL ?? ""}`;
  let db = cache.get(key);
  if (!db) {
    const local = env.LOCAL_DB_URL;
    // The endpoint is a driver-global setting; every isolate talks to one database.
    if (local) neonConfig.fetchEndpoint = () => local;
    db = connect(env.DATABASE_URL);
    cache.set(key, db);
  }
  return db;
}
