/**
 * The Hono environment shared by every sub-app: bindings plus the variable every request has. What
 * a route knows of its caller comes from the `require*()` middleware it declares
 * (src/worker/require.ts), typed {@link Authenticated}: Hono types a handler's `c.var` by the
 * middleware on its route, so reading a variable no middleware of the route sets does not compile.
 * Helpers that take a context are generic over `E extends AppEnv` (Hono's `Context` is invariant
 * in its environment).
 */
import type { Context } from "hono";
import { type AnswerHold, answerMemory } from "../answer-memory.ts";
import type { AppMcpRuntime, AppMcpSettings } from "../app-mcp/admin.ts";
import type { AppClient, Principal, ProjectRef } from "../credentials/principal.ts";
import type { CredentialHolder } from "./credential-cache.ts";
import type { Db } from "./db.ts";
import type { Env } from "./env.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /**
     * The request's hold on the isolate's answer memory (src/answer-memory.ts), opened by the
     * Worker's entry (`createApp`); absent for an app called another way (some tests).
     */
    answerHold?: AnswerHold;
    /** drizzle over the Neon driver, set by the `database` middleware. */
    db: Db;
    /**
     * Who made this request, set where it is authenticated: after a control-plane write, the
     * isolate's cached resolutions of theirs are forgotten (src/worker/app.ts, credential-cache.ts).
     */
    credentialHolder?: CredentialHolder;
    /**
     * The browser origins of the project the request's credentials resolved to (its
     * `allowed_origins`), set once a client key checks out or a cached resolution is used: which
     * `Origin` the SDK routes answer with CORS headers (src/worker/sdk-cors.ts).
     */
    corsOrigins?: readonly string[];
  };
}

/** What the `require*()` middleware put into the context, by name. */
export interface CallerVariables {
  /** The developer (developer token): `requireDeveloper()`, `requireProjectAdmin()`. */
  developerId: string;
  /** The row id of the developer token the request came with: `requireDeveloper()`. */
  developerTokenId: string;
  /** The addressed project: `requireProjectAdmin()`, `requireClientKey()`, `requireEndUser()`. */
  project: ProjectRef;
  /** The project's app-MCP config, from the same statement: `requireProjectAdmin()`. */
  appConfig: AppMcpSettings;
  /** What the hot routes read of it (no exposure lists): `requireProjectCaller()`, `requireAppClient()`. */
  appRuntime: AppMcpRuntime;
  /** Developer or end user, for the project in the path: `requireProjectCaller()`. */
  principal: Principal;
  /** An app's client code (client key, optional session): `requireAppClient()`. */
  appClient: AppClient;
  /** The signed-in end user (client key + session): `requireEndUser()`. */
  endUser: { id: string; email: string };
  /** That end user's session row id: `requireEndUser()`. */
  sessionId: string;
}

/** The environment of a route whose middleware set the variables `K`. */
export type Authenticated<K extends keyof CallerVariables> = AppEnv & {
  Variables: Pick<CallerVariables, K>;
};

/**
 * The request's caller is known: from here on its database answers count in `share` (a project id,
 * `developer:<id>`) — if the entry could not tell from the URL whose they are (a hostname's app, a
 * platform request). An app addressed by id and by hostname, or a developer's platform requests,
 * are then one share of the isolate's answer memory, not one per address (src/answer-memory.ts).
 * They also count in the share of `developerId`, the developer whose app (or platform request) it
 * is: a developer's many apps together hold no more of the isolate than one app may.
 */
export function answerAs<E extends AppEnv>(c: Context<E>, share: string, developerId: string): void {
  const hold = c.var.answerHold;
  if (!hold) return;
  if (hold.app === "" || hold.app.startsWith("host:")) answerMemory.move(hold, share);
  answerMemory.tenant(hold, developerId);
}
