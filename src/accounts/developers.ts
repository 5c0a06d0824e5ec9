/**
 * Developer sign-up: the developer, a developer token, a first project (with its app-MCP config row)
 * and a first client key, written in one batch (one transaction). The token and the key are shown
 * once; only their SHA-256 digests are stored.
 */
import { eq } from "drizzle-orm";
import { appMcpConfigs, clientKeys, developers, developerTokens, projects } from "../../schema/index.ts";
import type { Db } from "../db.ts";
import { isUniqueViolation } from "../db-errors.ts";
import { conflict } from "../errors.ts";
import type { Limiter } from "../rate-limit.ts";
import { parseInput } from "../validate.ts";
import { issueCredential } from "./crypto.ts";
import { listProjects, type ProjectView } from "./projects.ts";
import { DeveloperSignupSchema } from "./schemas.ts";

/** Name of the project created at sign-up when none is given. */
export const FIRST_PROJECT_NAME = "My first project";

/** The sign-up answer: the token and the client key appear here and nowhere else, ever. */
export interface DeveloperSignupResult {
  developer: { id: string; email: string };
  token: string;
  project: { id: string; name: string };
  client_key: string;
}

/**
 * Where a sign-up comes from: the caller's IP (null where the host reports none) and the limiter it
 * counts against. REST and the platform MCP pass the same limiter, so they share one budget per IP.
 */
export interface SignupOrigin {
  clientIp: string | null;
  limit: Limiter;
}

/**
 * Create a developer with token, first project, its app-MCP config and a client key in one batch
 * (ids generated here so the rows can reference each other). Every attempt counts against the
 * caller's IP first, valid or not (429 when over); 400 for bad input (`DeveloperSignupSchema`),
 * 409 when the email is taken.
 */
export async function signupDeveloper(
  db: Db,
  body: unknown,
  origin: SignupOrigin,
): Promise<DeveloperSignupResult> {
  if (origin.clientIp)
    await origin.limit(`developer-signup:${origin.clientIp}`, "developer sign-ups from this address");
  const input = parseInput(DeveloperSignupSchema, body);
  const developerId = crypto.randomUUID();
  const projectId = crypto.randomUUID();
  const projectName = input.project_name ?? FIRST_PROJECT_NAME;
  const token = await issueCredential("developer");
  const key = await issueCredential("clientKey");
  try {
    await db.batch([
      db.insert(developers).values({ id: developerId, email: input.email }),
      db.insert(developerTokens).values({ id: token.id, developerId, secretHash: token.secretHash }),
      db.insert(projects).values({ id: projectId, developerId, name: projectName }),
      db.insert(appMcpConfigs).values({ projectId }),
      db.insert(clientKeys).values({ id: key.id, projectId, secretHash: key.secretHash }),
    ]);
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict("a developer with this email already exists");
    throw err;
  }
  return {
    developer: { id: developerId, email: input.email },
    token: token.token,
    project: { id: projectId, name: projectName },
    client_key: key.token,
  };
}

/** A developer and their projects (oldest first), as `amba_whoami` answers. */
export interface WhoamiView {
  developer: { id: string; email: string } | undefined;
  projects: ProjectView[];
}

/** The developer a token names, with their projects. */
export async function whoami(db: Db, developerId: string): Promise<WhoamiView> {
  const [[developer], owned] = await Promise.all([
    db
      .select({ id: developers.id, email: developers.email })
      .from(developers)
      .where(eq(developers.id, developerId)),
    listProjects(db, developerId),
  ]);
  return { developer, projects: owned };
}
