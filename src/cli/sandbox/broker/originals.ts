/**
 * The Node functions and values the broker itself calls, captured when this module is first
 * evaluated: tool-host.ts imports the broker before it runs any tool code, and every hook is
 * installed later, so none of these is a patched function or one tool code chose. A capture moved
 * into a hook would see whatever is installed by then: new ones belong here. Nor may a hook import a
 * name from a Node built-in (`import { types } from "node:util"`): in the bundle that is a live ES
 * binding, which `module.syncBuiltinESMExports()` points at whatever tool code assigned to the
 * module's property (`node:path`, frozen by the host, is the exception).
 */
import fs from "node:fs";
import moduleApi from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { types } from "node:util";

// Captured before anything is patched: the broker's own file-system access.
export const realpathOriginal = fs.realpathSync.bind(fs);
export const statSyncOriginal = fs.statSync.bind(fs);
export const isBuiltin = moduleApi.isBuiltin;
export const openSyncOriginal = fs.openSync.bind(fs);
export const openOriginal = fs.open.bind(fs);
export const promisesOpenOriginal = fs.promises.open.bind(fs.promises);
export const closeSyncOriginal = fs.closeSync.bind(fs);
export const ftruncateSyncOriginal = fs.ftruncateSync.bind(fs);
export const fstatSyncOriginal = fs.fstatSync.bind(fs);
export const fstatOriginal = fs.fstat.bind(fs);
export const readSyncOriginal = fs.readSync.bind(fs);
export const writeSyncOriginal = fs.writeSync.bind(fs);
export const allocBuffer = Buffer.allocUnsafe.bind(Buffer);
export const cwdOriginal = process.cwd.bind(process);
export const fileUrlToPath = fileURLToPath;
export const pathToFileUrl = pathToFileURL;
export const UrlClass = URL;
export const canParseUrl = URL.canParse;
const textDecoder = new TextDecoder();
export const decodeBytes = textDecoder.decode.bind(textDecoder);
export const FS_CONSTANTS = { ...fs.constants };
export const OWN_PID = process.pid;
export const nextTick = process.nextTick.bind(process);
export const isProxy = types.isProxy;
export const isArrayBufferView = types.isArrayBufferView;
export const hasInstanceOriginal = Function.prototype[Symbol.hasInstance];
/** Linux's `O_PATH`: a descriptor that names a file without opening it for reading or writing. */
export const O_PATH = 0o10000000;
export const bufferFrom = Buffer.from.bind(Buffer);
export const DirentClass = fs.Dirent as unknown as new (
  name: string,
  type: number,
  path: string,
) => fs.Dirent;
export const BlobClass = Blob;
export const isDate = types.isDate;
export const dateGetTime = Function.prototype.call.bind(Date.prototype.getTime) as (date: unknown) => number;
export const chdirOriginal = process.chdir.bind(process);
export const isArray = Array.isArray;
