import { ConfigurationError } from "@sluice/core";

/** The syntax {@link parsePortRange} accepts, for messages and docs. */
export const PORT_RANGE_SYNTAX =
  'a port ("9249"), a range ("9250-9260") or a comma-separated list of both ("9250,9300-9310"); 0 picks any free port';

/**
 * Parses Flink's port range syntax (Flink's `PortRange`): a port, an inclusive range `from-to`, or
 * a comma-separated list of them. Returns the ports in the order written, without duplicates, so
 * that several processes on one host can each take the first free one.
 *
 * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) for anything else, naming `key` and the value.
 */
export function parsePortRange(text: string, key: string): number[] {
  const ports: number[] = [];
  const seen = new Set<number>();
  const fail = (why: string): never => {
    throw new ConfigurationError(
      `Invalid value for config key "${key}": ${JSON.stringify(text)} (${why}); expected ${PORT_RANGE_SYNTAX}`,
    );
  };
  const parts = text.split(",").map((part) => part.trim());
  if (parts.every((part) => part === "")) fail("no port");
  for (const part of parts) {
    if (part === "") fail("an empty entry");
    const match = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    if (match === null) fail(`"${part}" is not a port or a range`);
    const from = Number(match?.[1]);
    const to = match?.[2] === undefined ? from : Number(match[2]);
    if (from > 65535 || to > 65535) fail(`"${part}" is above 65535`);
    if (to < from) fail(`the range "${part}" ends before it starts`);
    for (let port = from; port <= to; port++) {
      if (!seen.has(port)) {
        seen.add(port);
        ports.push(port);
      }
    }
  }
  return ports;
}
