/**
 * The browser origins an app's MCP endpoint admits (`allowed_origins` of its app-MCP config), read
 * without credentials: a CORS preflight carries none. One statement, by slug or by project id.
 */
import { eq } from "drizzle-orm";
import { appMcpConfigs, projects } from "../../schema/index.ts";
import { UUID } from "../data/columns.ts";
import type { Db } from "../db.ts";

/** An app's allowed origins, with whose app it is (what a cached copy is forgotten by). */
export interface AppOrigins {
  projectId: string;
  developerId: string;
  origins: readonly string[];
}

/** The app's allowed origins; null for an unknown app (or a project id that is not a uuid). */
export async function appAllowedOrigins(
  db: Db,
  app: { slug: string } | { projectId: string },
): Promise<AppOrigins | null> {
  if ("projectId" in app && !UUID.test(app.projectId)) return null;
  const [row] = await db
    .select({
      projectId: projects.id,
      developerId: projects.developerId,
      origins: appMcpConfigs.allowedOrigins,
    })
    .from(projects)
    .leftJoin(appMcpConfigs, eq(appMcpConfigs.projectId, projects.id))
    .where("slug" in app ? eq(appMcpConfigs.slug, app.slug) : eq(projects.id, app.projectId));
  return row ? { projectId: row.projectId, developerId: row.developerId, origins: row.origins ?? [] } : null;
}
