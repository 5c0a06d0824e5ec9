/**
 * The console's Events page rendering (pure): an event's properties are one line of JSON a reader
 * sees as written — what JSON leaves raw (bidi controls, C1, U+2028/9) escaped as `\uXXXX` — cut at
 * whole code points, and the markup around them escaped by the template.
 */
import { describe, expect, it } from "vitest";
import { eventsPage, PROPERTIES_SHOWN, propertiesText } from "../../../src/console/pages.ts";

describe("console events page", () => {
  it("shows properties as JSON with bidi, C1 and line separator characters escaped", () => {
    // U+202E would show `{"file":"exe.txt"}` as `{"file":"txt.exe"}`-like reversed text.
    expect(propertiesText({ file: "\u202eexe.txt", csi: "\u009b2J", sep: "a\u2028b", esc: "\u001b" })).toBe(
      '{"file":"\\u202eexe.txt","csi":"\\u009b2J","sep":"a\\u2028b","esc":"\\u001b"}',
    );
  });

  it("cuts long properties at whole code points", () => {
    const text = propertiesText({ s: "😀".repeat(PROPERTIES_SHOWN) });
    expect(text.endsWith("…")).toBe(true);
    expect(Array.from(text)).toHaveLength(PROPERTIES_SHOWN + 1);
    // No half of a surrogate pair is left at the cut (one would show as U+FFFD).
    expect(/\p{Cs}/u.test(text)).toBe(false);
    expect(propertiesText({ short: 1 })).toBe('{"short":1}');
  });

  it("keeps the filter and page size in the next page's link, escaped", async () => {
    const page = String(
      await eventsPage("n", {
        project: { id: "p1", name: "<b>Demo</b>" },
        csrf: "c",
        events: [],
        next_cursor: "a+b/c=",
        query: { name: "signup", limit: "10" },
        resumed: false,
      }),
    );
    expect(page).toContain(
      '<a id="next-page" href="/console/projects/p1/events?name=signup&amp;limit=10&amp;cursor=a%2Bb%2Fc%3D">',
    );
    expect(page).toContain("No <code>signup</code> events.");
    expect(page).toContain("&lt;b&gt;Demo&lt;/b&gt;");
    expect(page).not.toContain("<b>Demo");
  });
});
