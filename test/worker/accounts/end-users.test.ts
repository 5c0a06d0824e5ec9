import { sql } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import {
  api,
  apiJson,
  endUserHeaders,
  expectError,
  requestRoundTrips,
  signupDeveloper,
  signupUser,
  testDb,
  uniqueEmail,
} from "../helpers.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

describe("end-user auth", () => {
  it("signs up (201), signs in (200), reads /me and signs out", async () => {
    const dev = await signupDeveloper();
    const email = uniqueEmail("eu");
    const signup = await apiJson("/v1/auth/signup", {
      apiKey: dev.clientKey,
      json: { email, password: "s3cret-password" },
    });
    expect(signup.status).toBe(201);
    expect(signup.body).toMatchObject({
      session_token: expect.stringMatching(/^amba_sess_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/),
      user: { id: expect.any(String), email },
    });
    const expires = Date.parse(signup.body.expires_at);
    expect(Math.abs(expires - Date.now() - 30 * DAY_MS)).toBeLessThan(60_000);

    const signin = await apiJson("/v1/auth/signin", {
      apiKey: dev.clientKey,
      json: { email, password: "s3cret-password" },
    });
    expect(signin.status).toBe(200);
    expect(signin.body.user).toEqual(signup.body.user);
    expect(signin.body.session_token).not.toBe(signup.body.session_token);

    const me = await apiJson("/v1/auth/me", {
      headers: endUserHeaders(dev.clientKey, signin.body.session_token),
    });
    expect(me.status).toBe(200);
    expect(me.body.user).toEqual(signup.body.user);

    const out = await apiJson("/v1/auth/signout", {
      method: "POST",
      headers: endUserHeaders(dev.clientKey, signin.body.session_token),
    });
    expect(out).toEqual({ status: 200, body: { signed_out: true } });
    expectError(
      await apiJson("/v1/auth/me", { headers: endUserHeaders(dev.clientKey, signin.body.session_token) }),
      401,
    );
    // Signing out one session leaves the others alive.
    const other = await apiJson("/v1/auth/me", {
      headers: endUserHeaders(dev.clientKey, signup.body.session_token),
    });
    expect(other.status).toBe(200);
  });

  it("stores the password as PBKDF2 with a per-user salt and the session as a SHA-256 digest", async () => {
    const dev = await signupDeveloper();
    const a = await signupUser(dev.projectId, dev.clientKey, uniqueEmail(), "same password!");
    const b = await signupUser(dev.projectId, dev.clientKey, uniqueEmail(), "same password!");
    const { rows } = await testDb().execute(sql`
      select u.password_hash, u.password_salt, u.password_iterations, s.secret_hash
      from app_users u join sessions s on s.user_id = u.id
      where u.id in (${a.userId}::uuid, ${b.userId}::uuid) order by u.created_at`);
    const [ra, rb] = rows as {
      password_hash: string;
      password_salt: string;
      password_iterations: number;
      secret_hash: string;
    }[];
    expect(ra?.password_iterations).toBe(100_000);
    expect(ra?.password_salt).not.toBe(rb?.password_salt);
    expect(ra?.password_hash).not.toBe(rb?.password_hash);
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain("same password!");
    expect(dump).not.toContain(a.sessionToken.slice(-43));
    expect(ra?.secret_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("answers 401 with the same message for a wrong password and an unknown email", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const wrong = await apiJson("/v1/auth/signin", {
      apiKey: dev.clientKey,
      json: { email: user.email, password: "wrong password" },
    });
    const unknown = await apiJson("/v1/auth/signin", {
      apiKey: dev.clientKey,
      json: { email: uniqueEmail("nobody"), password: "wrong password" },
    });
    expectError(wrong, 401);
    expectError(unknown, 401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body.error.message).toBe("invalid email or password");
  });

  it("scopes users to their project: same email in two projects, no cross-project sign-in", async () => {
    const devA = await signupDeveloper();
    const devB = await signupDeveloper();
    const email = uniqueEmail("shared");
    await signupUser(devA.projectId, devA.clientKey, email, "password-a");
    const inB = await apiJson("/v1/auth/signin", {
      apiKey: devB.clientKey,
      json: { email, password: "password-a" },
    });
    expectError(inB, 401, "invalid email or password");
    await signupUser(devB.projectId, devB.clientKey, email, "password-b");
    const dup = await apiJson("/v1/auth/signup", {
      apiKey: devA.clientKey,
      json: { email: email.toUpperCase(), password: "password-c" },
    });
    expectError(dup, 409);
  });

  it("signs in with two database round trips: key + user lookup, then the session insert", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    try {
      const res = await apiJson("/v1/auth/signin", {
        apiKey: dev.clientKey,
        json: { email: user.email, password: user.password },
      });
      expect(res.status).toBe(200);
      expect(requestRoundTrips(fetchSpy)).toBe(2);
    } finally {
      fetchSpy.mockRestore();
    }
  });

  it("keeps a user's newest 100 sessions: a sign-in drops older ones and those expired over a week ago", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const neighbour = await signupUser(dev.projectId, dev.clientKey);
    const db = testDb();
    await db.execute(
      sql`update sessions set created_at = now() - interval '1 day' where user_id = ${user.userId}::uuid`,
    );
    // 120 later sign-ins, oldest first, and 3 sessions of the neighbour's.
    for (const who of [
      { id: user.userId, count: 120 },
      { id: neighbour.userId, count: 3 },
    ]) {
      await db.execute(sql`
        insert into sessions (project_id, user_id, secret_hash, expires_at, created_at)
        select ${dev.projectId}::uuid, ${who.id}::uuid, 'x', now() + interval '1 day',
          now() - make_interval(mins => 200 - n)
        from generate_series(1, ${who.count}) as n`);
    }
    // One that expired ten days ago (else it would be among the newest): gone too.
    await db.execute(sql`
      update sessions set expires_at = now() - interval '10 days'
      where id = (select id from sessions where user_id = ${user.userId}::uuid order by created_at desc limit 1)`);
    const signin = await apiJson("/v1/auth/signin", {
      apiKey: dev.clientKey,
      json: { email: user.email, password: user.password },
    });
    expect(signin.status).toBe(200);
    const count = async (userId: string) =>
      Number(
        (
          (await db.execute(sql`select count(*)::int as n from sessions where user_id = ${userId}::uuid`))
            .rows[0] as { n: number }
        ).n,
      );
    expect(await count(user.userId)).toBe(100);
    expect(await count(neighbour.userId)).toBe(4); // 3 + the sign-up's: untouched
    const expiredLeft = await db.execute(
      sql`select 1 from sessions where user_id = ${user.userId}::uuid and expires_at < now()`,
    );
    expect(expiredLeft.rows).toHaveLength(0);
    // The new session works; the sign-up's session (older than the newest 100) was signed out.
    expect(
      (await apiJson("/v1/auth/me", { headers: endUserHeaders(dev.clientKey, signin.body.session_token) }))
        .status,
    ).toBe(200);
    expectError(
      await apiJson("/v1/auth/me", { headers: endUserHeaders(dev.clientKey, user.sessionToken) }),
      401,
    );
  });

  it("treats SQL and odd bytes in credentials and emails as data, never as a 500", async () => {
    const dev = await signupDeveloper();
    const inHeaders = ["' or '1'='1", "x'; drop table app_users; --", "amba_ck_'--", "a".repeat(5000)];
    for (const value of inHeaders) {
      expectError(
        await apiJson("/v1/auth/signin", { apiKey: value, json: { email: "a@b.co", password: "password" } }),
        401,
      );
      expectError(await apiJson("/v1/auth/me", { headers: endUserHeaders(dev.clientKey, value) }), 401);
    }
    for (const value of [...inHeaders, "\u0000", "é🙂"]) {
      const signin = await apiJson("/v1/auth/signin", {
        apiKey: dev.clientKey,
        json: { email: `${value}@example.com`, password: value },
      });
      expect([400, 401]).toContain(signin.status);
    }
    const user = await signupUser(dev.projectId, dev.clientKey, uniqueEmail(), "pass' or 1=1 --");
    const back = await apiJson("/v1/auth/signin", {
      apiKey: dev.clientKey,
      json: { email: user.email, password: "pass' or 1=1 --" },
    });
    expect(back.status).toBe(200);
    const wrong = await apiJson("/v1/auth/signin", {
      apiKey: dev.clientKey,
      json: { email: user.email, password: "' or 1=1 --" },
    });
    expectError(wrong, 401);
  });

  it("checks the client key before the body fields", async () => {
    expectError(await apiJson("/v1/auth/signin", { apiKey: "junk", json: { email: 1 } }), 401);
    expectError(await apiJson("/v1/auth/signup", { apiKey: "junk", json: {} }), 401);
  });

  it("validates the body: bad JSON, missing, mistyped fields and short passwords → 400", async () => {
    const dev = await signupDeveloper();
    const badJson = await api("/v1/auth/signup", {
      method: "POST",
      apiKey: dev.clientKey,
      headers: { "content-type": "application/json" },
      body: "nope",
    });
    expect(badJson.status).toBe(400);
    const cases: [unknown, string][] = [
      [{ password: "long enough" }, "email"],
      [{ email: uniqueEmail() }, "password"],
      [{ email: uniqueEmail(), password: 12345678 }, "password"],
      [{ email: uniqueEmail(), password: "short" }, "password"],
      [{ email: "bad", password: "long enough" }, "email"],
    ];
    for (const [json, field] of cases) {
      expectError(await apiJson("/v1/auth/signup", { apiKey: dev.clientKey, json }), 400, field);
    }
    expectError(
      await apiJson("/v1/auth/signin", { apiKey: dev.clientKey, json: { email: uniqueEmail() } }),
      400,
      "password",
    );
  });

  it("requires a valid client key for sign-up and sign-in", async () => {
    const dev = await signupDeveloper();
    const json = { email: uniqueEmail(), password: "long enough" };
    expectError(await apiJson("/v1/auth/signup", { json }), 401, "X-Api-Key");
    for (const apiKey of ["", "junk", dev.token, `${dev.clientKey.slice(0, -3)}xyz`]) {
      expectError(await apiJson("/v1/auth/signup", { apiKey, json }), 401);
      expectError(await apiJson("/v1/auth/signin", { apiKey, json }), 401);
    }
  });

  it("rejects malformed, unknown, revoked, expired and foreign sessions with 401", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const foreign = await signupUser(other.projectId, other.clientKey);
    const bad = [
      "",
      "amba_sess_",
      "amba_sess_xyz_abc",
      `${user.sessionToken.slice(0, -2)}zz`,
      `amba_sess_${crypto.randomUUID().replaceAll("-", "")}_${user.sessionToken.slice(-43)}`,
      dev.token,
      foreign.sessionToken,
    ];
    for (const token of bad) {
      expectError(await apiJson("/v1/auth/me", { headers: endUserHeaders(dev.clientKey, token) }), 401);
    }
    expectError(await apiJson("/v1/auth/me", { apiKey: dev.clientKey }), 401);
    expectError(await apiJson("/v1/auth/me", { token: user.sessionToken }), 401);
    // A session is only valid with a key of its own project.
    expectError(
      await apiJson("/v1/auth/me", { headers: endUserHeaders(other.clientKey, user.sessionToken) }),
      401,
    );

    expect(
      (await apiJson("/v1/auth/me", { headers: endUserHeaders(dev.clientKey, user.sessionToken) })).status,
    ).toBe(200);
    await testDb().execute(
      sql`update sessions set expires_at = now() - interval '1 second' where user_id = ${user.userId}::uuid`,
    );
    const expired = await apiJson("/v1/auth/me", {
      headers: endUserHeaders(dev.clientKey, user.sessionToken),
    });
    expectError(expired, 401, "expired");
    expectError(
      await apiJson("/v1/auth/signout", {
        method: "POST",
        headers: endUserHeaders(dev.clientKey, user.sessionToken),
      }),
      401,
    );
  });

  it("rejects a session once its client key is revoked", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const keys = await apiJson(`/v1/admin/projects/${dev.projectId}/client-keys`, { token: dev.token });
    await apiJson(`/v1/admin/projects/${dev.projectId}/client-keys/${keys.body.client_keys[0].id}`, {
      token: dev.token,
      method: "DELETE",
    });
    expectError(
      await apiJson("/v1/auth/me", { headers: endUserHeaders(dev.clientKey, user.sessionToken) }),
      401,
      "client key",
    );
  });
});
