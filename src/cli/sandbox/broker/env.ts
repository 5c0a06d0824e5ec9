/**
 * The environment: `process.env` becomes a proxy over the real one, so reading a variable that is
 * not there (the tool process has only the granted ones) is a check, audited; and what the machine
 * says of itself in `os` (its name, addresses, user) is read like a variable.
 */
import os from "node:os";
import { type Broker, type Target, wrap } from "./context.ts";

/**
 * The variables Node's own JavaScript reads (Node 20 and 22, found in their built-in sources):
 * colour detection (`tty.getColorDepth`, which `console` and `util.inspect` consult), debug logs,
 * warnings, child-process and cluster set-up, the REPL and test runner, bundled dependencies. A
 * read of one of these from what looks like Node's code writes no audit line; none holds a secret
 * (the proxy variables, which may carry credentials, are left out: Node reads them only when
 * asked to proxy, and such a read is a line).
 */
const NODE_OWN_VARIABLES = new Set([
  "AGENT_NAME",
  "APPVEYOR",
  "BUILDKITE",
  "CI",
  "CI_NAME",
  "CIRCLECI",
  "COLORTERM",
  "DRONE",
  "FORCE_COLOR",
  "GITEA_ACTIONS",
  "GITHUB_ACTIONS",
  "GITLAB_CI",
  "JEST_WORKER_ID",
  "NO_COLOR",
  "NODE_CHANNEL_FD",
  "NODE_CHANNEL_SERIALIZATION_MODE",
  "NODE_CLUSTER_SCHED_POLICY",
  "NODE_DEBUG",
  "NODE_DISABLE_COLORS",
  "NODE_EXTRA_CA_CERTS",
  "NODE_INSPECT_RESUME_ON_START",
  "NODE_MANY_ACCEPTS",
  "NODE_NO_READLINE",
  "NODE_NO_WARNINGS",
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_PENDING_PIPE_INSTANCES",
  "NODE_REPL_EXTERNAL_MODULE",
  "NODE_REPL_HISTORY",
  "NODE_REPL_HISTORY_SIZE",
  "NODE_REPL_MODE",
  "NODE_TEST_CONTEXT",
  "NODE_TLS_REJECT_UNAUTHORIZED",
  "NODE_UNIQUE_ID",
  "NODE_V8_COVERAGE",
  "TEAMCITY_VERSION",
  "TERM",
  "TERM_PROGRAM",
  "TERM_PROGRAM_VERSION",
  "TF_BUILD",
  "TMUX",
  "TRAVIS",
  "UNDICI_NO_FG",
  "WATCH_REPORT_DEPENDENCIES",
  "__MINIMATCH_TESTING_PLATFORM__",
]);

/** Installs the checks of the environment and of the machine's identity. */
export function hookEnvironment(broker: Broker): void {
  const { ask, check, realEnv } = broker;
  const report = process.report as unknown as Target | undefined;
  // What generic code probes on any object (JSON.stringify, await, util.inspect, test matchers):
  // unless such a variable really exists, these are not environment reads, neither checked nor audited.
  const INSPECTION_KEYS = new Set([
    "toJSON",
    "then",
    "constructor",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "__proto__",
    "inspect",
    "asymmetricMatch",
    "$$typeof",
    "nodeType",
    "@@__IMMUTABLE_ITERABLE__@@",
    "@@__IMMUTABLE_RECORD__@@",
  ]);
  // The tool process only has the granted variables: enumerating shows those, reading one
  // that is not there is a check (Deny under --sandbox, audited).
  const notAnEnvRead = (key: string): boolean => INSPECTION_KEYS.has(key) && !Object.hasOwn(realEnv, key);
  /**
   * Whether the reader looks like Node's own code. Only a hint: a frame's script name is the
   * tool's to choose (`//# sourceURL=node:…` on code it evaluates, a `filename` given to `vm`),
   * so it decides only whether a refusal is thrown, never whether a line is written — see
   * {@link checkEnvRead}.
   */
  const calledFromNodeInternals = () => {
    const stack = new Error().stack?.split("\n") ?? [];
    // [0] "Error", [1] this function, [2] checkEnvRead, [3] the proxy trap, then the reader — past
    // the built-ins in between (`Object.hasOwn`, `Reflect.get`: "at Proxy.hasOwn (<anonymous>)"),
    // which are nobody's: what called them decides.
    let reader = 4;
    while (stack[reader]?.endsWith("(<anonymous>)")) reader++;
    return /\(node:|at node:/.test(stack[reader] ?? "");
  };
  /**
   * A variable read: checked, audited, and refused by throwing when the tool reads it. A read that
   * looks like Node's own (colours, debug logs, a spawn copying the environment) never throws —
   * Node's code must not fail — and whoever chose the script name, it is audited too when it asks
   * about a variable that is not there, unless Node itself reads that name
   * ({@link NODE_OWN_VARIABLES}). One that is there is granted, and enumerating shows its value anyway.
   */
  const checkEnvRead = (key: string) => {
    if (!calledFromNodeInternals()) check("Environment", "Read", key);
    else if (!Object.hasOwn(realEnv, key) && !NODE_OWN_VARIABLES.has(key)) ask("Environment", "Read", key);
  };
  const envProxy = new Proxy(realEnv, {
    get(target, key, receiver) {
      if (typeof key === "string" && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      if (typeof key === "string" && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.has(target, key);
    },
    // `Object.getOwnPropertyDescriptor(process.env, name)` (and `Object.hasOwn`) probe a name as
    // much as reading it does; the granted ones, which enumerating shows anyway, pass unaudited.
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === "string" && !Object.hasOwn(target, key) && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
  Reflect.defineProperty(process, "env", {
    value: envProxy,
    writable: true,
    configurable: true,
    enumerable: true,
  });
  // What the machine says of itself — its name, its addresses, its user — is read like a variable
  // (`os.<function>`, granted by `--allow-env os.hostname`): Node asks the system, not `process.env`.
  // `os.homedir()` reads the user's passwd entry only when `HOME` is not set (libuv's
  // `uv_os_homedir`); with it set, it answers the variable, which is granted. A diagnostic report
  // carries the host name and the interfaces too. `process.binding("os")` is refused
  // (process.ts).
  const osTarget = os as unknown as Target;
  for (const name of ["hostname", "networkInterfaces", "userInfo"])
    wrap(osTarget, name, () => check("Environment", "Read", `os.${name}`));
  wrap(osTarget, "homedir", () => {
    if (!Object.hasOwn(realEnv, "HOME")) check("Environment", "Read", "os.homedir");
  });
  if (report)
    wrap(report, "getReport", () => {
      check("Environment", "Read", "os.hostname");
      check("Environment", "Read", "os.networkInterfaces");
    });
}
