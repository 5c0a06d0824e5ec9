/**
 * Text from others made safe to print on a terminal, or to show as one line on a page (pure): the
 * names, descriptions and messages a server (`amba`) or a tool file (`amber`) chose, the properties
 * an app's client code sent with an event (the console). A terminal acts on control characters — ESC starts
 * sequences that move the cursor, retitle the window, write the clipboard (OSC 52) or hide links
 * (OSC 8), `\r` overwrites a line, and in UTF-8 some terminals take C1 (U+0080–U+009F) as controls
 * too — and bidi controls reorder what is shown (U+202E makes `exe.txt` read `txt.exe`). These are
 * shown as escapes instead. Byte-exact outputs (`run --export-tools`, the protocol streams) never
 * pass through here.
 */

/** What a terminal acts on in one line: C0 (newlines and tabs too), DEL, C1, bidi controls, separators. */
const UNSAFE_IN_LINE =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same but newlines and tabs: lines of output, kept as lines. */
const UNSAFE_IN_LINES =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same without C0: in JSON text those are already escaped (or are its own layout). */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** JSON's spelling of a character: `\n`, `\r`, `\t`, else `\uXXXX`. */
const jsonEscape = (c: string) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** One line of text with every control character shown as its JSON escape. */
export const printable = (text: string): string => text.replace(UNSAFE_IN_LINE, jsonEscape);

/** Lines of text (`\n` and tabs kept) with every other control character shown as its JSON escape. */
export const printableLines = (text: string): string => text.replace(UNSAFE_IN_LINES, jsonEscape);

/**
 * JSON text (as `JSON.stringify` makes it) that a terminal shows as written: the controls JSON
 * leaves raw (DEL, C1, bidi, U+2028/9) become `\uXXXX` escapes — the same JSON value, since these
 * characters can only stand inside strings.
 */
export const printableJson = (json: string): string => json.replace(UNSAFE_IN_JSON, jsonEscape);
