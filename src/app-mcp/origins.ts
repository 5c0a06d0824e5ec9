/**
 * The browser origins an app's MCP endpoint admits (`allowed_origins` of its app-MCP config), read
 * without credentials: a CORS preflight carries none. One statement, by slug or by project id.
 */
import { eq } from "drizzle-orm";
import { appMcpConfigs, projects } from "../../schema/index.ts";
import { UUID } from "../data/columns.ts";
import type { Db } from "../db.ts";

/** The app's allowed origins; null for an unknown app (or a project id that is not a uuid). */
export async function appAllowedOrigins(
  db: Db,
  app: { slug: string } | { projectId: string },
): Promise<readonly string[] | null> {
  if ("slug" in app) {
    const [row] = await db
      .select({ origins: appMcpConfigs.allowedOrigins })
      .from(appMcpConfigs)
      .where(eq(appMcpConfigs.slug, app.slug));
    return row?.origins ?? null;
  }
  if (!UUID.test(app.projectId)) return null;
  const [row] = await db
    .select({ id: projects.id, origins: appMcpConfigs.allowedOrigins })
    .from(projects)
    .leftJoin(appMcpConfigs, eq(appMcpConfigs.projectId, projects.id))
    .where(eq(projects.id, app.projectId));
  return row ? (row.origins ?? []) : null;
}
