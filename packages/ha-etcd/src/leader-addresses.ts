import type { LeaderEndpoints } from "@sluice/runtime-api";

/**
 * The value of a leader's candidate key once it confirmed its leadership: where it serves and
 * where its other services serve (its REST endpoint, its shuffle master), as JSON
 * (`{"address":…,"restAddress":…,"shuffleMasterAddress":…}`). A value that is not such an
 * object is read as a bare address, as the first releases wrote it.
 */
export interface LeaderAddresses extends LeaderEndpoints {
  readonly address: string;
}

/** The endpoints a leader may publish, by their key in the value. */
const ENDPOINT_KEYS = ["restAddress", "shuffleMasterAddress"] as const;

/** The candidate key's value for `address` and `endpoints`. */
export function encodeLeaderAddresses(address: string, endpoints: LeaderEndpoints = {}): string {
  const value: Record<string, string> = { address };
  for (const key of ENDPOINT_KEYS) {
    const endpoint = endpoints[key];
    if (endpoint !== undefined) value[key] = endpoint;
  }
  return JSON.stringify(value);
}

/** What a candidate key's (non-empty) value says; an endpoint that is not a string is left out. */
export function decodeLeaderAddresses(value: string): LeaderAddresses {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return { address: value };
  }
  if (typeof parsed !== "object" || parsed === null) return { address: value };
  const fields = parsed as Record<string, unknown>;
  if (typeof fields.address !== "string") return { address: value };
  const decoded: { address: string; restAddress?: string; shuffleMasterAddress?: string } = {
    address: fields.address,
  };
  for (const key of ENDPOINT_KEYS) {
    const endpoint = fields[key];
    if (typeof endpoint === "string") decoded[key] = endpoint;
  }
  return decoded;
}
