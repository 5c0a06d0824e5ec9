/**
 * The path calls the CLI does for a tool host (protocol.ts `FileOp`), once the judge has decided on
 * what the host's descriptor really is. Each acts through `/proc/<host>/fd/<fd>`: a link the kernel
 * resolves to the file the descriptor holds, not by walking the tool's path again, so no directory
 * or link swapped on that path after the decision redirects it. Node lists a directory, reads a
 * link or changes a mode only by path, and refuses the host `/proc/self/fd` and `fchmod`, `fchown`,
 * `futimes` under its permission model: the CLI, outside that model, is where such a call can be
 * made on a descriptor. Runs only in the CLI.
 */
import { constants } from "node:fs";
import {
  access,
  chmod,
  chown,
  lchown,
  link,
  lutimes,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readlink,
  rename,
  rmdir,
  statfs,
  unlink,
  utimes,
} from "node:fs/promises";
import { basename } from "node:path";
import { DIRENT, type FileOp, type OpError, type PinnedEntry } from "./protocol.ts";

/** The calls that act on an entry without following it (the others act on the file a descriptor names). */
const ENTRY_OPS = new Set<FileOp["o"]>([
  "lchown",
  "lutimes",
  "readlink",
  "unlink",
  "rmdir",
  "rm",
  "mkdir",
  "rename",
  "link",
]);

/**
 * Where a call on `entry` of host `host` acts: the entry `name` in the directory the descriptor
 * holds; the descriptor's file itself; or, for an entry call on a descriptor with no name (the
 * host could not open the entry's directory: it is above every grant, out of the tool's reach),
 * the entry's real path, `resource`.
 */
export function opPath(host: number, entry: PinnedEntry, resource: string, op: FileOp["o"]): string {
  const proc = `/proc/${host}/fd/${entry.fd}`;
  if (entry.name !== undefined) return `${proc}/${entry.name}`;
  return ENTRY_OPS.has(op) ? resource : proc;
}

/** A directory entry's type as libuv numbers it. */
function direntType(entry: import("node:fs").Dirent): number {
  if (entry.isFile()) return DIRENT.FILE;
  if (entry.isDirectory()) return DIRENT.DIR;
  if (entry.isSymbolicLink()) return DIRENT.LINK;
  if (entry.isFIFO()) return DIRENT.FIFO;
  if (entry.isSocket()) return DIRENT.SOCKET;
  if (entry.isCharacterDevice()) return DIRENT.CHAR;
  if (entry.isBlockDevice()) return DIRENT.BLOCK;
  return DIRENT.UNKNOWN;
}

/**
 * Removes `path` and, if it is a directory, everything below it, each directory held open
 * (`O_NOFOLLOW`) while its entries are removed through it: a directory swapped for a link midway
 * is not followed (its open fails), where a walk by path would empty what the link names.
 */
async function removeTree(path: string): Promise<void> {
  try {
    await unlink(path);
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EPERM") throw error;
  }
  const dir = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    const here = `/proc/self/fd/${dir.fd}`;
    for (const name of await readdir(here)) await removeTree(`${here}/${name}`);
  } finally {
    await dir.close();
  }
  await rmdir(path);
}

async function run(op: FileOp, at: string, from: string | undefined, named: boolean): Promise<unknown> {
  switch (op.o) {
    case "readdir": {
      const entries = await readdir(at, { withFileTypes: true });
      return entries.map((entry) => [entry.name, direntType(entry)]);
    }
    case "access":
      return await access(at, op.mode);
    case "statfs": {
      const s = await statfs(at, { bigint: true });
      return [s.type, s.bsize, s.blocks, s.bfree, s.bavail, s.files, s.ffree].map(String);
    }
    case "chmod":
      return await chmod(at, op.mode);
    case "chown":
      return await chown(at, op.uid, op.gid);
    case "utimes":
      return await utimes(at, op.atime, op.mtime);
    case "lchown":
      return await lchown(at, op.uid, op.gid);
    case "lutimes":
      return await lutimes(at, op.atime, op.mtime);
    case "readlink":
      return (await readlink(at, { encoding: "buffer" })).toString("base64");
    case "unlink":
      return await unlink(at);
    case "rmdir":
      return await rmdir(at);
    case "rm":
      if (op.recursive) return await removeTree(at);
      try {
        return await unlink(at);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "EISDIR" && code !== "EPERM") throw error;
        throw Object.assign(new Error("Path is a directory: rm returned EISDIR (is a directory)"), {
          code: "ERR_FS_EISDIR",
          errno: 21,
          syscall: "rm",
        });
      }
    case "mkdir":
      return await mkdir(at, { mode: op.mode });
    case "mkdtemp":
      return basename(await mkdtemp(named ? at : `${at}/`));
    case "rename":
      return await rename(from as string, at);
    case "link":
      return await link(from as string, at);
  }
}

/** An error of a call made here, as the host rebuilds it on the tool's own paths (never the CLI's). */
function opError(error: unknown): OpError {
  const e = error as NodeJS.ErrnoException;
  const code = typeof e?.code === "string" ? e.code : "EIO";
  const message = typeof e?.message === "string" ? e.message : "";
  let text = "i/o error";
  if (code.startsWith("ERR_")) text = message;
  else if (message.startsWith(`${code}: `)) {
    const rest = message.slice(code.length + 2);
    const end = e.syscall === undefined ? -1 : rest.lastIndexOf(`, ${e.syscall}`);
    text = end === -1 ? rest : rest.slice(0, end);
  }
  return { code, errno: typeof e?.errno === "number" ? e.errno : undefined, syscall: e?.syscall, text };
}

/**
 * Does `op` at `at` (from `from`, for a move or a link; `named`: `at` ends in an entry's name) and
 * answers its value or its error.
 */
export async function performFileOp(
  op: FileOp,
  at: string,
  from: string | undefined,
  named: boolean,
): Promise<{ v?: unknown; e?: OpError }> {
  try {
    const v = await run(op, at, from, named);
    return v === undefined ? {} : { v };
  } catch (error) {
    return { e: opError(error) };
  }
}
