/**
 * amba's human output (pure): found by running `amba config set --slug null` against `npm run dev`,
 * where a null hostname URL turned the one `connection:` line into dotted lines.
 */
import { describe, expect, it } from "vitest";
import { render } from "../../src/cli/amba/output.ts";

describe("amba's human output", () => {
  it("prints an object of scalars on one line whether or not a value is null", () => {
    const url = "http://127.0.0.1:8787/app/p1/mcp";
    expect(render({ slug: null, connection: { url, hostname_url: null } })).toBe(
      `slug: -\nconnection: url=${url} hostname_url=-\n`,
    );
    expect(render({ connection: { url, hostname_url: "http://demo.mcp.localhost:8787/mcp" } })).toBe(
      `connection: url=${url} hostname_url=http://demo.mcp.localhost:8787/mcp\n`,
    );
  });

  it("prints nulls in a list of scalars as -, and still spreads an object holding objects", () => {
    expect(render({ tags: ["a", null] })).toBe("tags: a, -\n");
    const input_schema = { type: "object", properties: { a: { type: "number" } } };
    expect(render({ mcp: { description: "Add.", input_schema } })).toBe(
      `mcp.description: Add.\nmcp.input_schema: ${JSON.stringify(input_schema)}\n`,
    );
  });

  it("prints `amba expose`'s pending names one line per kind", () => {
    const exposure = {
      collections: ["recipes", "notes"],
      functions: ["send_welcome_email"],
      pending: { collections: ["notes"], functions: ["send_welcome_email"] },
    };
    expect(render(exposure)).toBe(
      "collections: recipes, notes\nfunctions: send_welcome_email\n" +
        "pending.collections: notes\npending.functions: send_welcome_email\n",
    );
  });
});
