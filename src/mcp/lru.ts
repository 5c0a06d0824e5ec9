/**
 * A map bounded by the total weight of its values, forgetting the least recently used first. The
 * isolate's caches use it where a tenant decides how large a value is (a project's metadata, the
 * schemas of a collection with 100 columns, a `tools/list` page): a count of entries alone would let
 * a few large values fill the isolate's 128 MB, and the requests of every tenant it serves would
 * fail with it. Pure.
 */
export class WeightedLru<K, V> {
  readonly #entries = new Map<K, { value: V; weight: number; share: unknown }>();
  #total = 0;
  /** The most total weight kept (an entry heavier than this alone is not kept at all). */
  readonly budget: number;
  readonly #weigh: (value: V, key: K) => number;
  readonly #shares: Shares<K, V> | undefined;
  /** Weight kept per share, with {@link Shares}. */
  readonly #shareTotals = new Map<unknown, number>();

  /**
   * @param weigh the weight of an entry, in the unit of `budget` (characters of its JSON, columns, …)
   * @param shares with it, no share (a tenant) keeps more than `budget` of its own: past it, its own
   *   least recently used entries go, not the other shares'
   */
  constructor(budget: number, weigh: (value: V, key: K) => number, shares?: Shares<K, V>) {
    this.budget = budget;
    this.#weigh = weigh;
    this.#shares = shares;
  }

  /** The value under `key` (now the most recently used), or undefined. */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Keep `value` under `key`, forgetting the least recently used entries past the budget. */
  set(key: K, value: V): void {
    this.delete(key);
    const weight = this.#weigh(value, key);
    if (weight > this.budget) return;
    const shares = this.#shares;
    const share = shares?.of(value, key);
    if (shares && weight > shares.budget) return;
    this.#entries.set(key, { value, weight, share });
    this.#total += weight;
    if (shares) {
      const held = (this.#shareTotals.get(share) ?? 0) + weight;
      this.#shareTotals.set(share, held);
      // The share's own oldest entries first (a scan from the oldest, only while it is over).
      if (held > shares.budget)
        for (const [oldest, entry] of this.#entries) {
          if ((this.#shareTotals.get(share) ?? 0) <= shares.budget) break;
          if (entry.share === share) this.delete(oldest);
        }
    }
    for (const [oldest] of this.#entries) {
      if (this.#total <= this.budget) break;
      this.delete(oldest);
    }
  }

  delete(key: K): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#total -= entry.weight;
    if (this.#shares) {
      const left = (this.#shareTotals.get(entry.share) ?? 0) - entry.weight;
      if (left > 0) this.#shareTotals.set(entry.share, left);
      else this.#shareTotals.delete(entry.share);
    }
  }

  /** Forget every entry `test` holds for (a scan: for invalidation, not for the request path). */
  deleteWhere(test: (value: V, key: K) => boolean): void {
    for (const [key, entry] of this.#entries) if (test(entry.value, key)) this.delete(key);
  }

  clear(): void {
    this.#entries.clear();
    this.#shareTotals.clear();
    this.#total = 0;
  }

  /** The total weight kept now (never above `budget`). */
  get weight(): number {
    return this.#total;
  }

  /** The weight `share` keeps now (with {@link Shares}; never above their `budget`). */
  shareWeight(share: unknown): number {
    return this.#shareTotals.get(share) ?? 0;
  }

  get size(): number {
    return this.#entries.size;
  }
}

/** A {@link WeightedLru}'s entries grouped by whose they are, each group bounded on its own. */
export interface Shares<K, V> {
  /** Whose an entry is (a project id, …): compared with `===`. */
  of(value: V, key: K): unknown;
  /** The most weight one share keeps. */
  budget: number;
}

/**
 * Two {@link WeightedLru}s by entry weight, so heavy entries compete only with heavy ones: entries
 * up to `smallMax` share `smallBudget`, heavier ones `largeBudget`. In one budget, a tenant whose
 * entries are each a large share of it (an app of megabytes of metadata) pushed out every other
 * tenant's with each entry it loaded — two such apps called in turn kept the whole cache cold. Now
 * one load evicts at most `smallMax` of the small entries, so emptying them takes
 * `smallBudget / smallMax` loads of distinct entries. Pure.
 */
export class SizeClassedLru<K, V> {
  readonly #small: WeightedLru<K, V>;
  readonly #large: WeightedLru<K, V>;
  readonly #smallMax: number;
  readonly #weigh: (value: V, key: K) => number;

  constructor(
    budgets: { smallMax: number; smallBudget: number; largeBudget: number },
    weigh: (value: V, key: K) => number,
  ) {
    this.#small = new WeightedLru(budgets.smallBudget, weigh);
    this.#large = new WeightedLru(budgets.largeBudget, weigh);
    this.#smallMax = budgets.smallMax;
    this.#weigh = weigh;
  }

  get(key: K): V | undefined {
    return this.#small.get(key) ?? this.#large.get(key);
  }

  set(key: K, value: V): void {
    this.delete(key);
    (this.#weigh(value, key) <= this.#smallMax ? this.#small : this.#large).set(key, value);
  }

  delete(key: K): void {
    this.#small.delete(key);
    this.#large.delete(key);
  }

  /** The total weight kept now (never above the two budgets together). */
  get weight(): number {
    return this.#small.weight + this.#large.weight;
  }
}
