import { ConfigurationError } from "@sluice/core";
import type { HostAndPort } from "../job-manager.js";

/**
 * Parses `host:port` (`[::1]:6123` for IPv6) as a command line gives it.
 *
 * @throws ConfigurationError naming `flag` and the value when it is not a host and a port.
 */
export function parseHostAndPort(value: string, flag: string): HostAndPort {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value.trim());
  const port = match === null ? Number.NaN : Number(match[3]);
  if (match === null || port > 65535) {
    throw new ConfigurationError(
      `${flag} expects host:port (e.g. 10.0.0.1:6123 or [::1]:6123), got ${JSON.stringify(value)}`,
    );
  }
  return { host: (match[1] ?? match[2]) as string, port };
}
