/**
 * Credential resolution's checks on the statement's one row, with literal rows: the statement is a
 * port (`ResolveRow`) for header credentials and a fake `Db` for OAuth grants and the sign-in page.
 * Which row the database returns is test/worker/accounts/resolve.test.ts's part.
 */
import { describe, expect, it } from "vitest";
import { issueCredential } from "../../../src/accounts/crypto.ts";
import {
  authenticateOAuthProject,
  type HeaderCheck,
  projectForSignin,
  resolveAppClient,
  resolveDeveloper,
  resolveProjectCaller,
  settingsFrom,
} from "../../../src/credentials/resolve.ts";
import type { Credentials, ProjectJoin, ResolvedRow } from "../../../src/credentials/statement.ts";
import type { Db } from "../../../src/db.ts";
import { AppError } from "../../../src/errors.ts";

const DEV = "0190c5a2-0000-7000-8000-00000000000d";
const PROJECT = "0190c5a2-0000-7000-8000-000000000001";
const OTHER_PROJECT = "0190c5a2-0000-7000-8000-000000000002";
const USER = "0190c5a2-0000-7000-8000-0000000000a1";

/** The row of a statement that joined nothing. */
const EMPTY: ResolvedRow = {
  token_developer_id: null,
  token_hash: null,
  token_live: null,
  key_project_id: null,
  key_hash: null,
  key_live: null,
  session_project_id: null,
  session_hash: null,
  session_live: null,
  user_id: null,
  user_email: null,
  user_project_id: null,
  signin_user_id: null,
  signin_email: null,
  signin_hash: null,
  signin_salt: null,
  signin_iterations: null,
  project_id: null,
  project_name: null,
  project_developer_id: null,
  meta_rev: null,
  function_signing_secret: null,
  previous_signing_secret: null,
  previous_signing_expires_ms: null,
  mcp_enabled: null,
  mcp_auth_mode: null,
  mcp_slug: null,
  mcp_collections: null,
  mcp_functions: null,
  mcp_rate_limit: null,
  mcp_origins: null,
  grant_revoked: false,
  token_revoked: false,
};

const PROJECT_ROW: Partial<ResolvedRow> = {
  project_id: PROJECT,
  project_name: "Chef",
  project_developer_id: DEV,
  meta_rev: "7",
  function_signing_secret: "amba_fsig_now",
};

/** A header check whose statement answers `row`, recording what it was asked. */
function headerCheck(headers: { bearer?: string; apiKey?: string }, row: Partial<ResolvedRow>) {
  const asked: { creds: Credentials; join: ProjectJoin }[] = [];
  const origins: (readonly string[])[] = [];
  const check: HeaderCheck = {
    bearer: headers.bearer,
    apiKey: headers.apiKey,
    resolveRow: async (creds, join) => {
      asked.push({ creds, join });
      return { ...EMPTY, ...row };
    },
    keyOrigins: (list) => origins.push(list),
  };
  return { check, asked, origins };
}

/** A `Db` whose one statement answers `row`. */
const dbAnswering = (row: Partial<ResolvedRow>) =>
  ({ execute: async () => ({ rows: [{ ...EMPTY, ...row }] }) }) as unknown as Db;

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (value) => value,
    (err: unknown) => (err instanceof AppError ? `${err.status} ${err.message}` : String(err)),
  );

describe("header credentials", () => {
  it("resolves a developer token to its developer and the project it owns, with the default config", async () => {
    const token = await issueCredential("developer");
    const row = { ...PROJECT_ROW, token_developer_id: DEV, token_hash: token.secretHash, token_live: true };
    const { check, asked } = headerCheck({ bearer: token.token }, row);
    expect(await outcome(resolveProjectCaller(check, { projectId: PROJECT }))).toEqual({
      principal: {
        scope: "developer",
        developerId: DEV,
        project: { id: PROJECT, name: "Chef", developerId: DEV, metaRev: 7 },
      },
      config: {
        enabled: true,
        authMode: "all",
        slug: null,
        exposedCollections: [],
        exposedFunctions: [],
        rateLimitPerMinute: 6_000,
        allowedOrigins: [],
        functionSigning: { secret: "amba_fsig_now", previous: null },
      },
    });
    expect(asked.map((a) => a.join)).toEqual([{ projectId: PROJECT }]);
  });

  it("answers 404 for another developer's project and 401 for a wrong secret or a revoked token", async () => {
    const token = await issueCredential("developer");
    const live = { token_developer_id: DEV, token_hash: token.secretHash, token_live: true };
    const foreign = { ...PROJECT_ROW, ...live, project_developer_id: "someone-else" };
    const revoked = { ...PROJECT_ROW, ...live, token_live: false };
    const wrong = { ...PROJECT_ROW, ...live, token_hash: "0".repeat(64) };
    const results = await Promise.all(
      [foreign, revoked, wrong].map((row) =>
        outcome(
          resolveProjectCaller(headerCheck({ bearer: token.token }, row).check, { projectId: PROJECT }),
        ),
      ),
    );
    expect(results).toEqual([
      "404 project not found",
      "401 invalid developer token",
      "401 invalid developer token",
    ]);
  });

  it("refuses a missing or malformed credential before the statement runs", async () => {
    const missing = headerCheck({}, {});
    const malformed = headerCheck({ bearer: "amba_dev_nope" }, {});
    const session = headerCheck({ bearer: "amba_sess_x_y" }, {});
    expect([
      await outcome(resolveDeveloper(missing.check)),
      await outcome(resolveDeveloper(malformed.check)),
      await outcome(resolveProjectCaller(session.check, { projectId: PROJECT })),
    ]).toEqual([
      "401 missing Authorization: Bearer <developer token>",
      "401 invalid developer token",
      "401 an end-user session token must come with X-Api-Key: <client key>",
    ]);
    expect([missing.asked, malformed.asked, session.asked]).toEqual([[], [], []]);
  });

  it("joins no project for an id that is not a uuid, and answers like an unknown project", async () => {
    const token = await issueCredential("developer");
    const row = { token_developer_id: DEV, token_hash: token.secretHash, token_live: true };
    const { check, asked } = headerCheck({ bearer: token.token }, row);
    expect(await outcome(resolveProjectCaller(check, { projectId: "1 or 1=1" }))).toBe(
      "404 project not found",
    );
    expect(asked.map((a) => a.join)).toEqual([{ none: true }]);
  });

  it("hears a client key's project origins once the key checks out, before an expired session's 401", async () => {
    const key = await issueCredential("clientKey");
    const session = await issueCredential("session");
    const row = {
      ...PROJECT_ROW,
      key_project_id: PROJECT,
      key_hash: key.secretHash,
      key_live: true,
      session_project_id: PROJECT,
      session_hash: session.secretHash,
      session_live: false,
      mcp_enabled: true,
      mcp_origins: ["https://app.example.com"],
    };
    const { check, origins } = headerCheck({ bearer: session.token, apiKey: key.token }, row);
    expect(await outcome(resolveProjectCaller(check, { projectId: PROJECT }))).toBe(
      "401 invalid or expired session",
    );
    expect(origins).toEqual([["https://app.example.com"]]);
  });

  it("keeps a key's origins to its own project, and refuses it for another", async () => {
    const key = await issueCredential("clientKey");
    const session = await issueCredential("session");
    const row = {
      ...PROJECT_ROW,
      key_project_id: OTHER_PROJECT,
      key_hash: key.secretHash,
      key_live: true,
      session_project_id: OTHER_PROJECT,
      session_hash: session.secretHash,
      session_live: true,
      user_id: USER,
      user_email: "ada@example.com",
      mcp_enabled: true,
      mcp_origins: ["https://app.example.com"],
    };
    const { check, origins } = headerCheck({ bearer: session.token, apiKey: key.token }, row);
    expect(await outcome(resolveProjectCaller(check, { projectId: PROJECT }))).toBe(
      "401 client key does not belong to this project",
    );
    expect(origins).toEqual([]);
  });

  it("resolves an app client with and without a session, and refuses a developer token beside the key", async () => {
    const key = await issueCredential("clientKey");
    const session = await issueCredential("session");
    const row = {
      ...PROJECT_ROW,
      key_project_id: PROJECT,
      key_hash: key.secretHash,
      key_live: true,
      session_project_id: PROJECT,
      session_hash: session.secretHash,
      session_live: true,
      user_id: USER,
      user_email: "ada@example.com",
    };
    const anonymous = await resolveAppClient(headerCheck({ apiKey: key.token }, row).check);
    const signedIn = await resolveAppClient(
      headerCheck({ apiKey: key.token, bearer: session.token }, row).check,
    );
    const developer = await outcome(
      resolveAppClient(headerCheck({ apiKey: key.token, bearer: "amba_dev_x_y" }, row).check),
    );
    expect([anonymous.principal.user, signedIn.principal.user, signedIn.principal.clientKeyId]).toEqual([
      undefined,
      { id: USER, email: "ada@example.com" },
      key.id,
    ]);
    expect(Object.keys(signedIn.config)).not.toContain("exposedCollections");
    expect(developer).toBe("401 send X-Api-Key (and an optional end-user session), not a developer token");
  });
});

describe("the row's app-MCP config", () => {
  it("maps a stored config and a rotation's previous signing secret", () => {
    const config = settingsFrom({
      ...EMPTY,
      ...PROJECT_ROW,
      previous_signing_secret: "amba_fsig_before",
      previous_signing_expires_ms: "1767225600000",
      mcp_enabled: false,
      mcp_auth_mode: "developer_only",
      mcp_slug: "chef",
      mcp_collections: ["recipes"],
      mcp_functions: ["plan"],
      mcp_rate_limit: 600,
      mcp_origins: ["https://chef.example"],
    });
    expect(config).toEqual({
      enabled: false,
      authMode: "developer_only",
      slug: "chef",
      exposedCollections: ["recipes"],
      exposedFunctions: ["plan"],
      rateLimitPerMinute: 600,
      allowedOrigins: ["https://chef.example"],
      functionSigning: {
        secret: "amba_fsig_now",
        previous: { secret: "amba_fsig_before", expiresAtMs: 1767225600000 },
      },
    });
  });
});

describe("OAuth grants and the sign-in page", () => {
  const endUserGrant = { kind: "end_user" as const, userId: USER, grantId: "g1", accessTokenId: "t1" };

  it("refuses a revoked grant, then a revoked access token, before anything else", async () => {
    const live = { ...PROJECT_ROW, user_id: USER, user_email: "a@b.c", user_project_id: PROJECT };
    expect([
      await outcome(
        authenticateOAuthProject(
          dbAnswering({ ...live, grant_revoked: true, token_revoked: true }),
          endUserGrant,
          { projectId: PROJECT },
        ),
      ),
      await outcome(
        authenticateOAuthProject(dbAnswering({ ...live, token_revoked: true }), endUserGrant, {
          projectId: PROJECT,
        }),
      ),
    ]).toEqual(["401 this authorization was revoked", "401 this access token was revoked"]);
  });

  it("resolves a grant's end user in its project, and refuses one who is not in it", async () => {
    const row = { ...PROJECT_ROW, user_id: USER, user_email: "a@b.c", user_project_id: PROJECT };
    const access = await authenticateOAuthProject(dbAnswering(row), endUserGrant, { projectId: PROJECT });
    expect(access.principal).toEqual({
      scope: "end_user",
      project: { id: PROJECT, name: "Chef", developerId: DEV, metaRev: 7 },
      user: { id: USER, email: "a@b.c" },
      clientKeyId: "oauth:g1",
    });
    expect(
      await outcome(
        authenticateOAuthProject(dbAnswering({ ...row, user_project_id: OTHER_PROJECT }), endUserGrant, {
          projectId: PROJECT,
        }),
      ),
    ).toBe("401 this authorization's user no longer exists in this project");
  });

  it("finds the sign-in page's project and its user's stored password, or null for no project", async () => {
    const found = await projectForSignin(
      dbAnswering({
        ...PROJECT_ROW,
        signin_user_id: USER,
        signin_email: "a@b.c",
        signin_hash: "h",
        signin_salt: "s",
        signin_iterations: "100000",
      }),
      { slug: "chef" },
      "a@b.c",
    );
    expect(found?.signinUser).toEqual({
      id: USER,
      email: "a@b.c",
      password: { hash: "h", salt: "s", iterations: 100_000 },
    });
    expect(await projectForSignin(dbAnswering({}), { slug: "nope" })).toBeNull();
  });
});
