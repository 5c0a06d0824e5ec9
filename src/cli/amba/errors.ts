/**
 * The `amba` CLI's one error type: a message for `error: …` on stderr and an exit status
 * (2 = usage, 1 = the operation failed).
 */
export class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** A usage error (bad flags, unknown command): exit status 2. */
export const usageError = (message: string) => new CliError(message, 2);
