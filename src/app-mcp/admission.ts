/**
 * Whether the app MCP endpoint admits a caller's scope now: its kill switch (`enabled`), then its
 * auth mode. One rule for the endpoint, which answers a refusal with 403 (src/worker/routes/app-mcp.ts),
 * and the console's project page, which says which scopes it would refuse
 * (src/worker/routes/console.ts); each words the refusal for its reader. No runtime imports: the
 * endpoint is on the hot path, and this module is in the Worker's start-up closure at no cost
 * (the config service beside it, admin.ts, is not: test/unit/startup-closure.test.ts).
 */
import type { AuthMode } from "./admin.ts";

/** Why the endpoint refuses a scope: turned off, or an auth mode that leaves the scope out. */
export type AppMcpRefusal = "disabled" | Exclude<AuthMode, "all">;

/** The reason the app MCP endpoint refuses `scope` under `config`, or null when it admits it. */
export function appMcpRefusal(
  config: { enabled: boolean; authMode: AuthMode },
  scope: "developer" | "end_user",
): AppMcpRefusal | null {
  if (!config.enabled) return "disabled";
  if (config.authMode === "client_only" && scope === "developer") return "client_only";
  if (config.authMode === "developer_only" && scope === "end_user") return "developer_only";
  return null;
}
