/**
 * Signing the console in the way its sign-in form does (a developer token POSTed as a form, the
 * redirect not followed), and the CSRF field its pages' forms carry.
 */
import { api } from "../helpers.ts";

/** POST /console/login with `token`: the response and the session cookie it set (`name=value`). */
export async function consoleLogin(token: string): Promise<{ res: Response; cookie: string }> {
  const res = await api("/console/login", {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token }).toString(),
  });
  return { res, cookie: (res.headers.get("set-cookie") ?? "").split(";")[0] as string };
}

/** The CSRF token in a console page's forms. */
export const csrfOf = (html: string): string => /name="csrf" value="([^"]+)"/.exec(html)?.[1] as string;

/** POST a console form as a browser sends it (urlencoded, the session `cookie`, no redirect followed). */
export function postForm(
  path: string,
  cookie: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return api(path, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}
