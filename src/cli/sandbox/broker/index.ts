/**
 * The in-process permission broker of the tool process. It decides nothing itself: every check is
 * forwarded to the CLI (`ask`), which decides, audits and answers; the broker enforces the answer.
 * It patches the real Node built-ins in place
 * (fs sync/callback/promises/streams, net/tls/http via `net.Socket#connect` and `net.Server#listen`,
 * dgram, dns, child_process, worker_threads, inspector, wasi, v8 heap snapshots and flags,
 * `process.env`, the machine's identity in `os`, `process.binding`, `process.dlopen`, `process.kill`,
 * `module.register`) so every route to them — `require`, dynamic
 * `import()`, `createRequire`, or `this.constructor.constructor("return process")()` — reaches the
 * same checked functions, and hooks the TCP and pipe handles so the address a socket really dials
 * (after any name lookup, whatever the arguments looked like) is checked too. Node's own permission
 * model, set up by the parent, is the second wall; `--frozen-intrinsics` keeps the built-ins the
 * broker uses out of the tool's reach, and every Node function it calls is captured before any tool
 * code runs (originals.ts). Runs only inside the tool process; nothing here may use a patched
 * function.
 *
 * One module per concern, installed here in order:
 * - originals.ts     what the broker calls, captured when the module loads
 * - context.ts       the shared checks and guards (`check`, `guardFd`, `hold`, …), `replace`, `wrap`
 * - net-handles.ts   what a TCP, pipe, UDP or resolver handle really dials, binds or asks
 * - fds.ts           the host's own pipes and the held descriptors
 * - fs-args.ts       a file call's path, read once, and the checks the file calls share
 * - fs-paths.ts      the path check of every `fs` call; fs-pinned.ts, entry calls on a pinned directory
 * - modules.ts       module loading's own looks at files (`Module._stat`, a resolve hook, …)
 * - watch.ts         `fs.watchFile` polled on confirmed descriptors, `fs.watch` refused
 * - fs-confirmed.ts  opens (and the content calls) on a descriptor the CLI confirmed
 * - fs-stat.ts       `stat`, `lstat`, `exists`, `access` on a confirmed `O_PATH` descriptor
 * - fs-copy.ts       copies and truncation on confirmed descriptors
 * - fs-via-cli.ts    the other path calls, made by the CLI on a confirmed descriptor
 * - net.ts           the network calls, refused up front by name
 * - child-process.ts spawns: the program the CLI resolved, a checked environment and stdio
 * - process.ts       workers, WASI, `vm` code caches, bindings, signals, reports, inspector, V8, …
 * - env.ts           `process.env` and the machine's identity
 */
import moduleApi from "node:module";
import { PermissionDeniedError } from "../../permissions.ts";
import { hookChildProcesses } from "./child-process.ts";
import { type Ask, type BrokerOptions, createBroker } from "./context.ts";
import { hookEnvironment } from "./env.ts";
import { hookDescriptors } from "./fds.ts";
import { createFileArgs } from "./fs-args.ts";
import { createConfirmedOpens, hookConfirmedOpens } from "./fs-confirmed.ts";
import { hookConfirmedCopies } from "./fs-copy.ts";
import { hookFsPathCalls, hookFsPromisesPathCalls } from "./fs-paths.ts";
import { hookConfirmedStats } from "./fs-stat.ts";
import { hookFsViaCli } from "./fs-via-cli.ts";
import { hookModuleResolution } from "./modules.ts";
import { hookNetCalls } from "./net.ts";
import { hookDial, hookResolver } from "./net-handles.ts";
import { hookProcessRuntime } from "./process.ts";
import { hookWatching } from "./watch.ts";

export type { Ask } from "./context.ts";

/** Installs the broker. Call once, before any tool code runs; `reserved` are the host's own pipes. */
export function installBroker(ask: Ask, options: BrokerOptions): void {
  // Tool code meets this class in every denial (`error.constructor`): a setter on its prototype would
  // run inside the broker's own paths, a `Symbol.hasInstance` would change what counts as a denial.
  Object.freeze(PermissionDeniedError.prototype);
  Object.freeze(PermissionDeniedError);
  const broker = createBroker(ask, options);
  // First, while net.Socket#connect is still Node's own.
  const handleFd = hookDial(ask, broker.guardFd, broker.guardClose, options.fsRestricted);
  hookResolver(ask);

  // The file system. The order matters: a call is often wrapped by its path check first, then
  // replaced by a stricter hook that runs it (`exists`, `stat`, `watchFile`, `chdir`, …).
  const files = createFileArgs(broker);
  hookDescriptors(broker);
  hookFsPathCalls(broker, files);
  hookModuleResolution(broker, files);
  hookFsPromisesPathCalls(broker, files);
  const opens = createConfirmedOpens(broker, files);
  hookWatching(broker, files, opens);
  hookConfirmedOpens(broker, files, opens);
  hookConfirmedStats(broker, files, opens);
  hookConfirmedCopies(files, opens);
  hookFsViaCli(broker, files, opens);

  hookNetCalls(broker);

  const children = hookChildProcesses(broker, handleFd);
  hookProcessRuntime(broker, files, children);
  hookEnvironment(broker);

  moduleApi.syncBuiltinESMExports();
}
