/**
 * `tools/list` pages bounded by weight (`toolsPageEnd`, `toolsPageWeight`, `ToolList.weight`): a
 * page ends at a count or before the tool that would pass the budget, always holds one tool, and its
 * cursors walk every tool once, whichever way the pages are served.
 */
import { describe, expect, it } from "vitest";
import { createMcpHandlers, dispatchText, type ToolList, toolsPageEnd } from "../../src/mcp/index.ts";

describe("toolsPageEnd", () => {
  const weights = [3, 3, 3, 10, 1, 1, 1, 1];
  const weightOf = (i: number) => weights[i]!;
  /** Every page of `weights` as [start, end) pairs. */
  const pagesOf = (maxTools: number, budget?: number) => {
    const pages: [number, number][] = [];
    for (let start = 0; start < weights.length; ) {
      const end = toolsPageEnd(start, weights.length, maxTools, budget, weightOf);
      pages.push([start, end]);
      start = end;
    }
    return pages;
  };

  it("pages by count when no budget is given", () => {
    expect(pagesOf(3)).toEqual([
      [0, 3],
      [3, 6],
      [6, 8],
    ]);
  });

  it("ends a page before the tool that would take it past the budget; a page at the budget is kept", () => {
    expect(pagesOf(100, 6)).toEqual([
      [0, 2],
      [2, 3],
      [3, 4],
      [4, 8],
    ]);
    expect(pagesOf(100, 9)).toEqual([
      [0, 3],
      [3, 4],
      [4, 8],
    ]);
  });

  it("holds at least one tool, however heavy, so every cursor advances", () => {
    expect(toolsPageEnd(3, weights.length, 100, 1, weightOf)).toBe(4);
    expect(pagesOf(100, 0.5).map(([s, e]) => e - s)).toEqual(weights.map(() => 1));
  });

  it("is the count limit under a budget that does not bind, and empty past the end", () => {
    expect(toolsPageEnd(0, weights.length, 2, 1000, weightOf)).toBe(2);
    expect(toolsPageEnd(0, 0, 100, 10, weightOf)).toBe(0);
  });
});

describe("tools/list under toolsPageWeight", () => {
  /** Tool i weighs `WEIGHTS[i]`; `built` records which definitions a page asked for. */
  const WEIGHTS = [1, 50, 50, 50, 200, 1, 1, 1, 1, 1, 1, 1];
  let built: number[] = [];
  const LIST: ToolList = {
    length: WEIGHTS.length,
    slice(start, end = WEIGHTS.length) {
      const tools = [];
      for (let i = start; i < end; i++) {
        built.push(i);
        tools.push({ name: `t${i}`, inputSchema: { type: "object" } });
      }
      return tools;
    },
    weight: (i) => WEIGHTS[i]!,
  };
  const handlers = (rawToolPages: boolean) =>
    createMcpHandlers<null>({
      serverInfo: { name: "weighted", version: "1" },
      toolsPageSize: 5,
      toolsPageWeight: 100,
      rawToolPages,
      tools: { list: () => LIST, call: async () => ({ value: null }) },
    });

  /** Every page's tool names, following nextCursor. */
  async function walk(rawToolPages: boolean) {
    const table = handlers(rawToolPages);
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const params = cursor === undefined ? {} : { cursor };
      const text = await dispatchText(
        JSON.stringify({ jsonrpc: "2.0", id: pages.length, method: "tools/list", params }),
        table,
        null,
        { transport: { protocolVersion: "2025-06-18" } },
      );
      const result = JSON.parse(text!).result as { tools: { name: string }[]; nextCursor?: string };
      pages.push(result.tools.map((t) => t.name));
      cursor = result.nextCursor;
    } while (cursor !== undefined);
    return pages;
  }

  it.each([true, false])(
    "walks every tool once in pages within the budget (rawToolPages %s)",
    async (raw) => {
      built = [];
      const pages = await walk(raw);
      expect(pages).toEqual([
        ["t0", "t1"],
        ["t2", "t3"],
        ["t4"],
        ["t5", "t6", "t7", "t8", "t9"],
        ["t10", "t11"],
      ]);
      // Only each page's own tools were built (the object path renders the list once).
      if (raw) expect(built).toEqual(WEIGHTS.map((_, i) => i));
    },
  );

  it("refuses a budget without a page size", () => {
    expect(() =>
      createMcpHandlers<null>({
        serverInfo: { name: "weighted", version: "1" },
        toolsPageWeight: 100,
        tools: { list: () => LIST, call: async () => ({ value: null }) },
      }),
    ).toThrow(RangeError);
  });
});
