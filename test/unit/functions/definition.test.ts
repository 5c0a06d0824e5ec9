import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AppError } from "../../../src/errors.ts";
import {
  checkAnnotation,
  DeployFunctionSchema,
  FUNCTION_NAME_MAX_LENGTH,
  FunctionNameSchema,
  FunctionUrlSchema,
  MAX_ANNOTATION_CHARS,
} from "../../../src/functions/definition.ts";

describe("function names", () => {
  it.each(["send_welcome_email", "a", "fn2", "a".repeat(FUNCTION_NAME_MAX_LENGTH)])("accepts %s", (name) => {
    expect(v.is(FunctionNameSchema, name)).toBe(true);
  });
  it.each([
    "",
    "Send",
    "2fast",
    "_x",
    "with-dash",
    "with space",
    "ü",
    "a".repeat(FUNCTION_NAME_MAX_LENGTH + 1),
  ])("rejects %j", (name) => {
    expect(v.is(FunctionNameSchema, name)).toBe(false);
  });
  it("keeps `<app>_fn_<name>` within MCP's 64-character tool names for a 20-character app prefix", () => {
    expect(`${"a".repeat(20)}_fn_${"b".repeat(FUNCTION_NAME_MAX_LENGTH)}`.length).toBeLessThanOrEqual(64);
  });
});

describe("function urls", () => {
  it.each(["https://fn.example.com/x", "http://127.0.0.1:8080/hook?x=1"])("accepts %s", (url) => {
    expect(v.is(FunctionUrlSchema, url)).toBe(true);
  });
  it.each(["ftp://example.com", "javascript:alert(1)", "/relative", "example.com", "file:///etc/passwd", ""])(
    "rejects %j",
    (url) => {
      expect(v.is(FunctionUrlSchema, url)).toBe(false);
    },
  );
});

describe("deploy body and annotation", () => {
  it("rejects unknown keys inside mcp instead of ignoring them", () => {
    const result = v.safeParse(DeployFunctionSchema, {
      name: "f",
      url: "https://x.example",
      mcp: { inputSchema: {} },
    });
    expect(result.success).toBe(false);
  });

  it("stores only what was declared", () => {
    expect(checkAnnotation(undefined)).toBeNull();
    expect(checkAnnotation({ description: "d" })).toEqual({ description: "d" });
    expect(checkAnnotation({ description: "d", input_schema: { type: "object" } })).toEqual({
      description: "d",
      input_schema: { type: "object" },
    });
  });

  it("names the offending path under mcp.input_schema", () => {
    expect(() => checkAnnotation({ input_schema: { type: "object", oneOf: [] } })).toThrow(
      /^mcp\.input_schema\.oneOf: /,
    );
  });

  it("refuses an annotation over MAX_ANNOTATION_CHARS of JSON, though each part keeps its own limit", () => {
    // 100 functions of ~0.7 MB annotations (within the per-part limits and the 1 MiB body) made one
    // app's metadata 73 M characters, 229 MiB of heap to load: past an isolate's 128 MB.
    const properties = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`p${i}`, { type: "string", description: "d".repeat(2048) }]),
    );
    const error = (() => {
      try {
        checkAnnotation({ input_schema: { type: "object", properties } });
      } catch (err) {
        return err;
      }
    })();
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ status: 400, code: "invalid_input" });
    expect((error as AppError).message).toMatch(
      new RegExp(`^mcp: the annotation is \\d+ characters of JSON; at most ${MAX_ANNOTATION_CHARS}`),
    );
    const within = Object.fromEntries(Object.entries(properties).slice(0, 25));
    expect(checkAnnotation({ input_schema: { type: "object", properties: within } })).not.toBeNull();
  });
});
