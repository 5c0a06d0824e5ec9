/**
 * A look at JSON text before `JSON.parse` builds it. V8 parses deeply nested JSON in time out of
 * proportion to its length: one 1 MiB body of `[[[…]]]` (500,000 levels) cost 13 ms of sampled JS
 * and 128 ms of workerd CPU (1.4 and 5 once this check refuses it), where a 1 MiB body of strings
 * costs 1.4 ms of JS (BENCHMARKS.md "Worst-case CPU per request"; Node 22 took 0.3 s for 100,000
 * levels). The input limits (src/limits.ts: 32 levels) can only be checked on the parsed value, so
 * the text is refused first when it nests deeper than anything they would let through by far.
 * Runtime-neutral and pure.
 */

/**
 * Deepest nesting of arrays and objects a JSON text may have to be parsed at all: far above the 32
 * levels inputs may have (those keep their precise message, naming the path, from the parsed value),
 * low enough that parsing stays near linear.
 */
export const MAX_JSON_NESTING = 16_384;

/**
 * Whether `text` opens more than `max` arrays / objects inside one another. One pass over the
 * characters outside strings (a string is skipped with `indexOf`); a text shorter than `2 × max`
 * cannot nest that deep and is not looked at. Malformed text is left to `JSON.parse` to refuse.
 */
export function jsonNestingExceeds(text: string, max: number = MAX_JSON_NESTING): boolean {
  if (text.length <= 2 * max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = closingQuote(text, i);
      if (i < 0) return false;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote closing the string opened at `open` (one not escaped), or -1. */
function closingQuote(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at >= 0; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
}
