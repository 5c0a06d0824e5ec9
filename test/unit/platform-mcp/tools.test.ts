import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AppError } from "../../../src/errors.ts";
import {
  PLATFORM_TOOLS,
  type PlatformToolSpec,
  parseToolArguments,
  platformToolDefinitions,
  toolInputSchema,
} from "../../../src/platform-mcp/tools.ts";

const invalid = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("invalid_input");
    return (err as AppError).message;
  }
  throw new Error("expected invalid_input");
};

describe("platform tool catalogue", () => {
  it("leaves only amba_developer_signup open, and every project tool takes project_id", () => {
    const specs = Object.entries(PLATFORM_TOOLS) as [string, PlatformToolSpec][];
    expect(specs.filter(([, t]) => t.auth === "none").map(([n]) => n)).toEqual(["amba_developer_signup"]);
    expect(specs.filter(([, t]) => t.auth === "developer").map(([n]) => n)).toEqual([
      "amba_whoami",
      "amba_tokens_list",
      "amba_tokens_create",
      "amba_tokens_revoke",
      "amba_projects_list",
      "amba_projects_create",
    ]);
    for (const [name, tool] of specs.filter(([, t]) => t.auth === "project")) {
      expect(Object.keys(tool.params)[0], name).toBe("project_id");
    }
  });

  it("lists every tool with a title, description, JSON Schema and annotations, in a stable order", () => {
    const tools = platformToolDefinitions();
    expect(tools.map((t) => t.name)).toEqual(Object.keys(PLATFORM_TOOLS));
    expect(platformToolDefinitions()).toBe(tools);
    for (const tool of tools) {
      expect(tool.name).toMatch(/^amba_[a-z_]+$/);
      expect(tool.title).toEqual(expect.any(String));
      expect(tool.description!.length).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.annotations).toEqual({
        title: tool.title,
        readOnlyHint: expect.any(Boolean),
        destructiveHint: expect.any(Boolean),
        idempotentHint: expect.any(Boolean),
        openWorldHint: false,
      });
    }
    const readOnly = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name);
    expect(readOnly).toEqual([
      "amba_whoami",
      "amba_tokens_list",
      "amba_projects_list",
      "amba_collections_list",
      "amba_functions_list",
      "amba_functions_versions",
      "amba_functions_signing_secret",
      "amba_app_mcp_get_exposure",
      "amba_app_mcp_get_config",
      "amba_billing_status",
      "amba_billing_daily",
      "amba_events_list",
      "amba_oauth_grants_list",
    ]);
  });

  it("merges params and the REST body schema into one input schema, with field descriptions", () => {
    const schema = toolInputSchema(PLATFORM_TOOLS.amba_app_mcp_set_exposure);
    // An exposed name, existing or not yet (the kinds' finer rules are checked by the service).
    const NAME = { type: "string", minLength: 1, maxLength: 63, pattern: "^[a-z][a-z0-9_]*$" };
    expect(schema).toEqual({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        project_id: { type: "string", description: expect.stringContaining("project's id") },
        collections: {
          type: "array",
          items: NAME,
          maxItems: 1000,
          description: "The complete set of collection names to expose.",
        },
        functions: {
          type: "array",
          items: NAME,
          maxItems: 100,
          description: "The complete set of function names to expose.",
        },
      },
      // project_id defaults to the developer's only project (resolved by the route).
      required: [],
      additionalProperties: false,
    });
    const alter = toolInputSchema(PLATFORM_TOOLS.amba_collections_alter);
    expect(Object.keys(alter.properties as object)).toEqual([
      "project_id",
      "name",
      "add_columns",
      "drop_columns",
      "access",
    ]);
    expect(alter.required).toEqual(["name"]);
    const rotate = toolInputSchema(PLATFORM_TOOLS.amba_functions_rotate_signing_secret);
    expect(rotate.properties).toMatchObject({
      previous_valid_for_seconds: { type: "integer", minimum: 0, maximum: 604800 },
    });
    expect(rotate.required).toEqual([]);
    // A strict REST body closes the tool's input, as the route refuses unknown fields.
    expect(toolInputSchema(PLATFORM_TOOLS.amba_developer_signup)).toHaveProperty(
      "additionalProperties",
      false,
    );
  });

  it("works with a minimal literal spec", () => {
    const spec: PlatformToolSpec = {
      title: "T",
      description: "d",
      auth: "project",
      params: { project_id: v.string() },
      body: v.strictObject({ n: v.number() }),
      fields: { n: "A number." },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    };
    expect(toolInputSchema(spec)).toEqual({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { project_id: { type: "string" }, n: { type: "number", description: "A number." } },
      required: ["n"],
      additionalProperties: false,
    });
  });
});

describe("parseToolArguments", () => {
  it("splits params from the body and leaves the body to the operation", () => {
    expect(
      parseToolArguments("amba_collections_alter", {
        project_id: "p",
        name: "recipes",
        drop_columns: ["tags"],
        bogus: 1,
      }),
    ).toEqual({ params: { project_id: "p", name: "recipes" }, body: { drop_columns: ["tags"], bogus: 1 } });
    expect(parseToolArguments("amba_developer_signup", { email: "x" })).toEqual({
      params: {},
      body: { email: "x" },
    });
    expect(parseToolArguments("amba_billing_status", { project_id: "p", period: "2026-11" })).toEqual({
      params: { project_id: "p", period: "2026-11" },
      body: {},
    });
  });

  it("names the argument that is missing, mistyped or unknown", () => {
    expect(invalid(() => parseToolArguments("amba_collections_list", {}))).toBe("project_id: is required");
    expect(invalid(() => parseToolArguments("amba_collections_drop", { project_id: "p" }))).toBe(
      "name: is required",
    );
    expect(invalid(() => parseToolArguments("amba_collections_list", { project_id: 7 }))).toBe(
      "project_id: must be a string",
    );
    expect(invalid(() => parseToolArguments("amba_collections_list", { project_id: "p", limit: 1 }))).toBe(
      "limit: unknown argument (this tool takes: project_id)",
    );
    expect(invalid(() => parseToolArguments("amba_whoami", { x: 1 }))).toBe(
      "x: unknown argument (this tool takes: none)",
    );
    expect(
      invalid(() => parseToolArguments("amba_billing_status", { project_id: "p", period: 202611 })),
    ).toBe("period: must be a string");
  });
});
