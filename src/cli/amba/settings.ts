/**
 * Where the `amba` CLI finds the service and the developer token: `--url`/`--token`, then
 * `AMBA_URL`/`AMBA_TOKEN`, then what `amba login` stored in `<config dir>/amba/config.json`
 * (`$XDG_CONFIG_HOME`, else `%APPDATA%` on Windows, else `~/.config`), written with mode 0600.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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

/** Store a login, readable by the user only (directory 0700, file 0600, also when it existed). */
export function writeStoredLogin(login: StoredLogin, path = configPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
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
  return { url: url.replace(/\/+$/, ""), token: flags.token ?? env.AMBA_TOKEN ?? stored?.token };
}
