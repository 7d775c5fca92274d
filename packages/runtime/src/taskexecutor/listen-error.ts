import { ConfigurationError } from "@sluice/core";

/** What a server listens for and the keys that set where: the names a listen error gives. */
export interface ListenTarget {
  /** What listens, for the message: `the job manager's control plane`, `the data server`. */
  readonly what: string;
  /** Where it tried to listen (used when the error does not say). */
  readonly host: string;
  readonly port: number;
  /** The key (or option) that chose the address. */
  readonly hostKey: string;
  /** The key (or option) that chose the port. */
  readonly portKey: string;
}

/** Why the operating system refused to listen, by its error code, and what to do about it. */
const REASONS: Readonly<Record<string, { readonly reason: string; readonly onHost: boolean }>> = {
  EADDRINUSE: { reason: "the port is in use by another socket", onHost: false },
  EACCES: { reason: "permission denied (ports below 1024 need privileges)", onHost: false },
  EADDRNOTAVAIL: { reason: "the address is not one of this host's", onHost: true },
};

/**
 * Turns the operating system's refusal to listen (`listen EADDRINUSE` and the like, which a
 * server emits as an 'error' event) into a ConfigurationError that names the address and the key
 * to change: the address is configuration, not a failure of the run. Any other error is returned
 * unchanged.
 */
export function listenError(error: unknown, target: ListenTarget): unknown {
  const errno = error as { code?: unknown; syscall?: unknown; address?: unknown; port?: unknown };
  if (typeof errno?.code !== "string" || errno.syscall !== "listen") return error;
  const known = REASONS[errno.code];
  if (known === undefined) return error;
  const host = typeof errno.address === "string" ? errno.address : target.host;
  const port = typeof errno.port === "number" ? errno.port : target.port;
  const address = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  const key = known.onHost ? target.hostKey : target.portKey;
  const fix = known.onHost
    ? `set ${key} to an address of this host`
    : `set ${key} to a free port (0 picks one)`;
  return new ConfigurationError(
    `${target.what} cannot listen on ${address} (${key}): ${known.reason} [${errno.code}]; ${fix}`,
    { cause: error },
  );
}
