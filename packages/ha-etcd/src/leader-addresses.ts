/**
 * The value of a leader's candidate key once it confirmed its leadership: where it serves and,
 * once its REST endpoint runs, where that serves, as JSON (`{"address":…,"restAddress":…}`). A
 * value that is not such an object is read as a bare address, as the first releases wrote it.
 */
export interface LeaderAddresses {
  readonly address: string;
  readonly restAddress?: string;
}

/** The candidate key's value for `address` and `restAddress`. */
export function encodeLeaderAddresses(address: string, restAddress: string | undefined): string {
  return JSON.stringify(restAddress === undefined ? { address } : { address, restAddress });
}

/** What a candidate key's (non-empty) value says. */
export function decodeLeaderAddresses(value: string): LeaderAddresses {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return { address: value };
  }
  if (typeof parsed !== "object" || parsed === null) return { address: value };
  const { address, restAddress } = parsed as Record<string, unknown>;
  if (typeof address !== "string") return { address: value };
  return typeof restAddress === "string" ? { address, restAddress } : { address };
}
