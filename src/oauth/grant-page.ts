/**
 * The paging input of a project's grant listing (src/oauth/grants.ts), checked the same for the
 * REST route's query and the `amba_oauth_grants_list` tool's params. Pure: the platform tools'
 * schemas import its bounds without loading the OAuth provider.
 */
import { invalidInput } from "../errors.ts";

/** Subjects per page of a project's grants: by default, and at most. */
export const DEFAULT_GRANT_PAGE = 50;
export const MAX_GRANT_PAGE = 100;

/** The longest `?cursor=` accepted (KV list cursors are far shorter) and its alphabet (base64 and base64url). */
const MAX_CURSOR_LENGTH = 1024;
const CURSOR_SHAPE = /^[A-Za-z0-9+/=_.-]+$/;

/** 400 for a cursor this listing did not hand out. */
export const badCursor = () => invalidInput("cursor: not a next_cursor returned by this listing");

/**
 * `?limit=` and `?cursor=` of a project's listing (strings from a query, or the tool's typed
 * params), checked: 400 `invalid_input` otherwise. Pure.
 */
export function grantPageInput(limit: unknown, cursor: unknown): { limit: number; cursor?: string } {
  const n = typeof limit === "string" && /^\d+$/.test(limit) ? Number(limit) : limit;
  if (
    n !== undefined &&
    n !== "" &&
    !(Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_GRANT_PAGE)
  )
    throw invalidInput(`limit: an integer from 1 to ${MAX_GRANT_PAGE}`);
  if (cursor !== undefined && cursor !== "") {
    if (typeof cursor !== "string" || cursor.length > MAX_CURSOR_LENGTH || !CURSOR_SHAPE.test(cursor))
      throw badCursor();
  }
  return {
    limit: typeof n === "number" ? n : DEFAULT_GRANT_PAGE,
    ...(typeof cursor === "string" && cursor !== "" ? { cursor } : {}),
  };
}
