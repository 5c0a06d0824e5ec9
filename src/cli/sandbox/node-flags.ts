/**
 * Translates a policy into the Node flags of the tool process: the permission model (`--permission`,
 * `--experimental-permission` on Node 20) restricted to what the policy allows, and the heap limit.
 * Pure apart from the flag detection.
 */
import { isUnrestricted, type Policy } from "../permissions.ts";

/** The permission-model switch of the running Node (`--permission` since 22, else the experimental one). */
export function permissionFlag(): string {
  return process.allowedNodeEnvironmentFlags.has("--permission")
    ? "--permission"
    : "--experimental-permission";
}

/** Whether the running Node's permission model covers the network (`--allow-net`, Node ≥ 25). */
export function hasNetPermission(): boolean {
  return process.allowedNodeEnvironmentFlags.has("--allow-net");
}

/** Files the tool process must always read: its own entry script, the tool file and its manifest. */
export interface RequiredReads {
  hostScript: string;
  entry: string;
  manifest?: string;
}

/**
 * Node flags for `policy`. An unrestricted policy runs without the permission model; otherwise reads
 * and writes are limited to the grants (write grants are also readable, so the broker can resolve
 * symlinks there), child processes only when some command may run, never workers, addons or WASI;
 * where Node can restrict the network (`netFlag`), none at all unless the policy allows some.
 */
export function nodePermissionArgs(
  policy: Policy,
  reads: RequiredReads,
  flag = permissionFlag(),
  netFlag = hasNetPermission(),
): string[] {
  if (isUnrestricted(policy)) return [];
  const args = [flag];
  if (policy.denied.includes("fs.read")) {
    const paths = [reads.hostScript, reads.entry, reads.manifest, ...policy.allowRead, ...policy.allowWrite];
    for (const path of new Set(paths)) if (path) args.push(`--allow-fs-read=${path}`);
  } else {
    args.push("--allow-fs-read=*");
  }
  if (policy.denied.includes("fs.write")) {
    for (const path of policy.allowWrite) args.push(`--allow-fs-write=${path}`);
  } else {
    args.push("--allow-fs-write=*");
  }
  if (!policy.denied.includes("run.execute") || policy.allowRun.length > 0)
    args.push("--allow-child-process");
  const someNetwork =
    !policy.denied.includes("net.connect") ||
    !policy.denied.includes("net.listen") ||
    policy.allowNet.length > 0 ||
    (policy.allowListen?.length ?? 0) > 0;
  if (netFlag && someNetwork) args.push("--allow-net");
  return args;
}
