/**
 * Keyset cursors: opaque base64url of the last row's (order value, id) plus the order signature,
 * so a cursor handed back with a different order is refused instead of skipping or repeating rows.
 */
import { invalidInput } from "../errors.ts";
import { UUID } from "./columns.ts";

/** What a cursor carries. `value` is the JSON value of the order column in the last row (may be null). */
export interface CursorPosition {
  order: string;
  value: unknown;
  id: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true } as TextDecoderConstructorOptions);
// Cursors are almost always ASCII (ISO timestamps, numbers, uuids): there UTF-8 bytes and char codes
// coincide, so the byte round trip is skipped (same output).
const ASCII = /^[\x00-\x7f]*$/;

function toBase64Url(text: string): string {
  let binary = text;
  if (!ASCII.test(text)) {
    binary = "";
    for (const byte of encoder.encode(text)) binary += String.fromCharCode(byte);
  }
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): string {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error("not base64url");
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  if (ASCII.test(binary)) return binary;
  return decoder.decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

/** Encode a position as an opaque cursor string. */
export function encodeCursor(position: CursorPosition): string {
  return toBase64Url(JSON.stringify([position.order, position.value, position.id]));
}

/** Decode a cursor issued for `order` (its signature, e.g. `created_at desc`); 400 otherwise. */
export function decodeCursor(cursor: string, order: string): CursorPosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fromBase64Url(cursor));
  } catch {
    throw invalidInput("cursor: not a cursor returned by this collection");
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    typeof parsed[0] !== "string" ||
    typeof parsed[2] !== "string" ||
    !UUID.test(parsed[2])
  ) {
    throw invalidInput("cursor: not a cursor returned by this collection");
  }
  const value: unknown = parsed[1];
  if (
    (typeof value === "number" && !Number.isFinite(value)) ||
    (typeof value === "string" && value.includes("\u0000"))
  ) {
    throw invalidInput("cursor: not a cursor returned by this collection");
  }
  if (parsed[0] !== order) {
    throw invalidInput(
      `cursor: issued for order "${parsed[0]}", not "${order}"; start again without a cursor`,
    );
  }
  return { order: parsed[0], value: parsed[1], id: parsed[2] };
}
