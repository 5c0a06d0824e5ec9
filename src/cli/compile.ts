/**
 * Compiles a tool file (.ts/.mts/.js/.mjs) with esbuild into one CommonJS-style module body: local
 * imports and packages bundled, Node built-ins left to the (brokered) `require`, `amber:mcp`
 * resolved to the CLI's own McpServer, `import.meta.url` / `filename` / `dirname` naming the entry
 * file. A module with top-level await is bundled as ESM instead and wrapped into an async body that
 * returns a promise (the tool host awaits it). esbuild is loaded lazily so `--export-tools` never pays for it.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** Options of {@link compileToolFile}. */
export interface CompileOptions {
  /** The file `amber:mcp` resolves to (the bundled McpServer module). */
  amberMcpPath: string;
  /** Extra cache key (the CLI version), so an upgrade never reuses old output. */
  cacheKey?: string;
  /** Where compiled bundles are cached (default: `bundles` in {@link amberCacheDir}). */
  cacheDir?: string;
  /** Called for every file the bundle reads; throws to refuse it (the sandbox's read policy). */
  checkInput?: (path: string) => void;
}

interface CacheEntry {
  inputs: Record<string, [mtimeMs: number, size: number]>;
  code: string;
}

function fingerprint(path: string): [number, number] | null {
  try {
    const stat = statSync(path);
    return [stat.mtimeMs, stat.size];
  } catch {
    return null;
  }
}

/**
 * The user's own cache directory for the CLI, `$XDG_CACHE_HOME/amber` or `~/.cache/amber`:
 * compiled bundles and extracted schemas. Not the shared temp directory: a cached bundle is code
 * the next start of that tool file runs, and anyone who can write it chooses that code.
 */
export function amberCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "amber");
}

function cacheFile(entry: string, options: CompileOptions): string {
  const key = createHash("sha256")
    .update(`${entry}\0${options.amberMcpPath}\0${options.cacheKey ?? ""}`)
    .digest("hex");
  return join(options.cacheDir ?? join(amberCacheDir(), "bundles"), `${key.slice(0, 32)}.json`);
}

function readCache(file: string, options: CompileOptions): string | undefined {
  let cached: CacheEntry;
  try {
    cached = JSON.parse(readFileSync(file, "utf8")) as CacheEntry;
  } catch {
    return undefined;
  }
  // A cached bundle was read under some earlier policy: check its inputs against this one.
  for (const path of Object.keys(cached.inputs))
    if (path !== options.amberMcpPath) options.checkInput?.(path);
  try {
    for (const [path, [mtime, size]] of Object.entries(cached.inputs)) {
      const now = fingerprint(path);
      if (!now || now[0] !== mtime || now[1] !== size) return undefined;
    }
    return cached.code;
  } catch {
    return undefined;
  }
}

function writeCache(file: string, entry: CacheEntry): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
    const temp = `${file}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify(entry));
    renameSync(temp, file);
  } catch {
    // The cache is an optimisation; a read-only temp dir just means compiling every time.
  }
}

/** Files modified this recently before a build are not cached (file timestamps can be coarse). */
const CACHE_MTIME_MARGIN_MS = 2_000;

/**
 * Bundles `entry` and returns the CommonJS source. Results are cached on disk and reused while
 * every input file keeps its mtime and size, so a warm start does not load esbuild at all.
 * Throws with esbuild's first error message.
 */
export async function compileToolFile(entry: string, options: CompileOptions): Promise<string> {
  const file = cacheFile(entry, options);
  const cached = readCache(file, options);
  if (cached !== undefined) return cached;
  const started = Date.now();
  const code = await build(entry, options);
  // Fingerprints are taken after bundling: a file edited meanwhile (`--watch`) may be in `code` as it
  // was before, under the new file's fingerprint, and that entry would then be served for the new
  // file. Only a result whose inputs are all older than the build (with a margin for coarse file
  // timestamps) is cached.
  if (Object.values(code.inputs).every(([mtime]) => mtime < started - CACHE_MTIME_MARGIN_MS))
    writeCache(file, code);
  return code.code;
}

const TOP_LEVEL_AWAIT_IN_CJS = /Top-level await is currently not supported with the "cjs" output format/;
const BUILTIN = "amber-builtin";
const builtins = new Set(builtinModules);

/**
 * For the ESM build: a Node built-in becomes a tiny CommonJS module over the real `require`, so the
 * output holds no `import` statement (esbuild's interop gives named and default imports).
 */
const builtinsViaRequire = {
  name: BUILTIN,
  setup(build: import("esbuild").PluginBuild) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.namespace === BUILTIN) return { path: args.path, external: true };
      const bare = args.path.startsWith("node:") ? args.path.slice(5) : args.path;
      return args.path.startsWith("node:") || builtins.has(bare)
        ? { path: args.path, namespace: BUILTIN }
        : undefined;
    });
    build.onLoad({ filter: /.*/, namespace: BUILTIN }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

const TRAILING_EXPORT = /\nexport \{([^}]*)\};\n((?:\/\/# sourceMappingURL=[^\n]*\n?)?)$/;

/**
 * Turns an ESM bundle without imports into a function body: the code runs inside an async arrow
 * (top-level await allowed), its exports become getters on `module.exports`, and the body returns
 * the promise of that evaluation. Line 1 stays line 1, so the inline source map still fits.
 */
export function esmBundleToAsyncBody(code: string): string {
  const match = TRAILING_EXPORT.exec(code);
  const body = match ? code.slice(0, match.index) : code;
  const sourceMap = match?.[2] ?? "";
  const getters = (match?.[1] ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .map((part) => {
      const [local, exported = local] = part.split(/\s+as\s+/);
      return `${JSON.stringify(exported)}: { get: () => ${local}, enumerable: true }`;
    });
  return (
    `return (async (__amber_module) => {${body}\n` +
    `Object.defineProperties(__amber_module.exports, { ${getters.join(", ")} });\n})(module);\n${sourceMap}`
  );
}

async function build(entry: string, options: CompileOptions): Promise<CacheEntry> {
  try {
    return await buildAs(entry, options, "cjs");
  } catch (error) {
    if (!TOP_LEVEL_AWAIT_IN_CJS.test((error as Error).message)) throw error;
    const esm = await buildAs(entry, options, "esm");
    return { inputs: esm.inputs, code: esmBundleToAsyncBody(esm.code) };
  }
}

async function buildAs(entry: string, options: CompileOptions, format: "cjs" | "esm"): Promise<CacheEntry> {
  const esbuild = await import("esbuild");
  const url = pathToFileURL(entry).href;
  try {
    const result = await esbuild.build({
      entryPoints: [entry],
      absWorkingDir: dirname(entry),
      bundle: true,
      write: false,
      format,
      platform: "node",
      target: "node20",
      logLevel: "silent",
      sourcemap: "inline",
      metafile: true,
      // As in an ES module loaded from the entry's path (bundled files share the entry's values).
      define: {
        "import.meta.url": JSON.stringify(url),
        "import.meta.filename": JSON.stringify(entry),
        "import.meta.dirname": JSON.stringify(dirname(entry)),
      },
      supported: format === "esm" ? { "top-level-await": true } : undefined,
      plugins: [
        ...(format === "esm" ? [builtinsViaRequire] : []),
        {
          name: "amber-mcp",
          setup(build) {
            build.onResolve({ filter: /^amber:mcp$/ }, () => ({ path: options.amberMcpPath }));
          },
        },
        {
          // Bundling reads files on the tool's behalf: hold those reads to the same policy.
          name: "amber-read-policy",
          setup(build) {
            build.onLoad({ filter: /.*/ }, (args) => {
              if (args.path !== options.amberMcpPath) options.checkInput?.(args.path);
              return undefined;
            });
          },
        },
      ],
    });
    const inputs: CacheEntry["inputs"] = {};
    for (const input of Object.keys(result.metafile.inputs)) {
      const path = resolve(dirname(entry), input);
      const print = fingerprint(path);
      if (print) inputs[path] = print;
    }
    return { inputs, code: result.outputFiles[0]!.text };
  } catch (error) {
    const first = (error as { errors?: { text: string; location?: { file: string; line: number } }[] })
      .errors?.[0];
    if (!first) throw error;
    if (first.text.startsWith("permission denied")) throw new Error(first.text);
    // esbuild reads some files past every plugin (a tsconfig's `extends`, anywhere on the disk), and
    // its error quotes them ("Unexpected \"<first token>\" in JSON"): a file the policy does not let
    // the tool read is refused here, not quoted.
    if (first.location) {
      const quoted = resolve(dirname(entry), first.location.file);
      if (quoted !== options.amberMcpPath) options.checkInput?.(quoted);
    }
    const where = first.location ? ` (${first.location.file}:${first.location.line})` : "";
    throw new Error(`Failed to compile tool file ${entry}: ${first.text}${where}`);
  }
}
