/**
 * Module loading's own looks at the file system, which Node's permission model does not check
 * before they tell a missing file from a refused one: CommonJS's `Module._stat`, ES module
 * resolution (a resolve hook, Node ≥ 22.15, registered before any tool code) and
 * `module.findPackageJSON`. Each candidate the tool may not read is refused before it is looked at.
 */
import moduleApi from "node:module";
import { dirname, isAbsolute as isAbsolutePath, resolve as resolvePath } from "node:path";
import { PermissionDeniedError } from "../../permissions.ts";
import { type Broker, replace, type Target } from "./context.ts";
import type { FileArgs } from "./fs-args.ts";
import {
  canParseUrl,
  FS_CONSTANTS,
  fileUrlToPath,
  isBuiltin,
  pathToFileUrl,
  statSyncOriginal,
  UrlClass,
} from "./originals.ts";

/** `module.registerHooks` (Node ≥ 22.15), as far as the broker uses it. */
type RegisterHooks = (hooks: {
  resolve: (
    specifier: string,
    context: { conditions?: string[]; parentURL?: string },
    nextResolve: (specifier: string, context: unknown) => { url?: unknown },
  ) => { url?: unknown };
}) => unknown;

/**
 * What an ES module specifier names, as Node's resolver reads it, before any file is looked at: a
 * path or `file:` URL (`/`, `./`, `../` against the importing module, else an absolute URL) is
 * that file; a package name is looked for in `node_modules` of the importing module's directory
 * and each one above. Undefined for `#imports`, builtins, other URLs and what Node refuses anyway.
 * `URL.prototype` is frozen by the host before tool code runs, so what is read here is what Node
 * reads.
 */
function moduleTarget(
  specifier: string,
  parentURL: string | undefined,
): { file: string } | { packageName: string; from: string } | undefined {
  try {
    const relative = /^\.{0,2}\//.test(specifier) || specifier === "." || specifier === "..";
    if (relative || canParseUrl(specifier)) {
      const url = relative ? new UrlClass(specifier, parentURL) : new UrlClass(specifier);
      return url.protocol === "file:" ? { file: fileUrlToPath(url) } : undefined;
    }
    if (specifier.startsWith("#") || isBuiltin(specifier) || !parentURL?.startsWith("file:"))
      return undefined;
    const [first = "", second = ""] = specifier.split("/", 2);
    return {
      packageName: first.startsWith("@") ? `${first}/${second}` : first,
      from: fileUrlToPath(parentURL),
    };
  } catch {
    return undefined;
  }
}

/** Whether `path` is a directory (the mode read from the stat, not through `Stats`' methods). */
function isDirectory(path: string): boolean {
  const mode = statSyncOriginal(path, { throwIfNoEntry: false })?.mode;
  return mode !== undefined && (mode & FS_CONSTANTS.S_IFMT) === FS_CONSTANTS.S_IFDIR;
}

/** Installs the checks of module loading's lookups. */
export function hookModuleResolution(broker: Broker, files: FileArgs): void {
  const { check, refuseIfDenied, options } = broker;
  const { fileResource } = files;
  // CommonJS resolution (`require`, `require.resolve` with any `paths`, `Module._findPath`) asks
  // `Module._stat` whether each candidate exists, which Node's permission model does not check: a
  // file out of the grants would be told from a missing one, with no line. Each candidate the tool
  // may not read is refused before it is looked at (audited; one it may read passes unaudited, like
  // Node's own reads of modules). The loader calls whatever `_stat` is set to, so this replaces it.
  const loader = moduleApi as unknown as { _stat?: (filename: string) => number };
  const statOriginal = loader._stat;
  if (typeof statOriginal === "function") {
    loader._stat = function stat(filename: string) {
      const file = String(filename);
      const { resource, escaped } = fileResource(file);
      if (escaped) check("FileSystem", "Read", resource, true);
      else refuseIfDenied("FileSystem", "Read", resource);
      return statOriginal(file);
    };
  }
  // ES module resolution (`import()`, a `data:` module's imports, `import.meta.resolve`) looks at
  // the file in Node's C++ before its permission model is asked: a missing file was told from a
  // refused one (`ERR_MODULE_NOT_FOUND` against `ERR_ACCESS_DENIED`). A resolve hook (Node ≥ 22.15,
  // in this thread, registered before any tool code, its handle kept here; tool code may register
  // none ahead of it, process.ts) decides before Node looks: on the file a path or URL names, and on
  // each `node_modules/<package>` Node will look in for a package name, nearest first, up to the
  // first directory there (as `_stat` does for CommonJS, which keeps that check); then on the file
  // Node resolved to.
  const checkModule = (file: string) => {
    const { resource, escaped } = fileResource(file);
    if (escaped) check("FileSystem", "Read", resource, true);
    else refuseIfDenied("FileSystem", "Read", resource);
  };
  /** Checks what `specifier` names before Node looks (see above). */
  const checkSpecifier = (specifier: string, parentURL: string | undefined) => {
    const target = moduleTarget(specifier, parentURL);
    if (target && "file" in target) checkModule(target.file);
    else if (target) {
      for (let dir = dirname(target.from), above = dirname(dir); ; dir = above, above = dirname(dir)) {
        const candidate = resolvePath(dir, "node_modules", target.packageName);
        checkModule(candidate);
        if (isDirectory(candidate) || above === dir) break;
      }
    }
  };
  const registerHooks = (moduleApi as unknown as { registerHooks?: RegisterHooks }).registerHooks;
  if (options.fsRestricted && typeof registerHooks === "function") {
    registerHooks({
      resolve(specifier, context, nextResolve) {
        if (context.conditions?.includes("require")) return nextResolve(specifier, context);
        checkSpecifier(specifier, context.parentURL);
        const resolved = nextResolve(specifier, context);
        const url = resolved?.url;
        if (typeof url === "string" && url.startsWith("file:")) checkModule(fileUrlToPath(url));
        return resolved;
      },
    });
  }
  // `module.findPackageJSON` (Node ≥ 22.14) looks, past Node's permission model, for a package the
  // same way (checked the same way first; its base read once), or for the package.json nearest
  // above a file, up past the grants: one found out of them is answered as none was found.
  if (options.fsRestricted)
    replace(
      moduleApi as unknown as Target,
      "findPackageJSON",
      (original) =>
        function findPackageJSON(this: unknown, ...a: unknown[]) {
          const base = a[1] === undefined ? undefined : String(a[1]);
          if (base !== undefined) a[1] = base;
          const parentURL = base !== undefined && isAbsolutePath(base) ? pathToFileUrl(base).href : base;
          if (typeof a[0] === "string") checkSpecifier(a[0], parentURL);
          const found = Reflect.apply(original, this, a);
          if (typeof found !== "string") return found;
          try {
            checkModule(found);
          } catch (error) {
            if (error instanceof PermissionDeniedError) return undefined;
            throw error;
          }
          return found;
        },
    );
}
