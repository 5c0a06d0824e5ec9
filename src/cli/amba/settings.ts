/**
 * Where the `amba` CLI finds the service and the developer token: `--url`/`--token`, then
 * `AMBA_URL`/`AMBA_TOKEN`, then what `amba login` stored in `<config dir>/amba/config.json`
 * (`$XDG_CONFIG_HOME`, else `%APPDATA%` on Windows, else `~/.config`), written with mode 0600.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { CliError } from "./errors.ts";

/** What `amba login` stores. */
export interface StoredLogin {
  url: string;
  token: string;
}

/** The service and token a command uses. */
export interface Connection {
  url: string;
  token: string | undefined;
}

/** The config file path for an environment. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME ||
    (process.platform === "win32" && env.APPDATA ? env.APPDATA : join(env.HOME || homedir(), ".config"));
  return join(base, "amba", "config.json");
}

/** The stored login, if any (a broken file is an error naming the file). */
export function readStoredLogin(path = configPath()): StoredLogin | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const stored = JSON.parse(readFileSync(path, "utf8")) as Partial<StoredLogin>;
    if (typeof stored.url === "string" && typeof stored.token === "string")
      return { url: stored.url, token: stored.token };
  } catch {}
  throw new CliError(`${path} is not a valid amba config (run \`amba login\` again)`);
}

/**
 * Store a login, readable by the user only (directory 0700, file 0600, also when they existed).
 * The token goes into a new file, created 0600 (`wx`: never an existing file or a link), which then
 * replaces the old one: writing into an existing file would put the token under that file's mode
 * (and any other link to it) until a chmod after it, and through a symbolic link into its target.
 */
export function writeStoredLogin(login: StoredLogin, path = configPath()): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const temporary = join(dir, `.config.json.${randomBytes(6).toString("hex")}`);
  try {
    writeFileSync(temporary, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    chmodSync(temporary, 0o600);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/**
 * The service's base URL as the CLI stores and uses it: no trailing `/`, and no trailing `/mcp` —
 * the platform MCP's own URL (what an MCP client config holds) names the same service.
 */
export function serviceUrl(url: string): string {
  return url.replace(/\/+$/, "").replace(/\/mcp$/, "");
}

/** Flags over environment over the stored login. */
export function resolveConnection(
  flags: { url?: string; token?: string },
  env: NodeJS.ProcessEnv = process.env,
): Connection {
  const stored = readStoredLogin(configPath(env));
  const url = flags.url ?? env.AMBA_URL ?? stored?.url;
  if (!url)
    throw new CliError(
      "no service URL: set AMBA_URL, pass --url, or run `amba login --url <url> --token <token>`",
    );
  return { url: serviceUrl(url), token: flags.token ?? env.AMBA_TOKEN ?? stored?.token };
}
