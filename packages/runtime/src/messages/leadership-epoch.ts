import { createHash, randomBytes } from "node:crypto";

/** What a leadership epoch may hold: it becomes part of file and transaction names. */
const EPOCH = /^[A-Za-z0-9]{1,32}$/;

/** The epoch of a task deployed without one (a descriptor built by hand). */
export const NO_LEADERSHIP_EPOCH = "0";

/**
 * True when `value` can be a leadership epoch: 1 to 32 ASCII letters and digits, so that it is
 * safe in a file name and never holds the `-` that separates the parts of a name.
 */
export function isLeadershipEpoch(value: unknown): value is string {
  return typeof value === "string" && EPOCH.test(value);
}

/**
 * The leadership epoch of a job manager's leadership (see `Task.leadershipEpoch`), from its
 * fencing token: the token itself when it is a safe name (etcd's is the create revision of the
 * leader key, a decimal number that grows with every leadership), else the first 16 hex digits
 * of its SHA-256 (a token of another high-availability plugin, such as a UUID).
 */
export function leadershipEpochOf(fencingToken: string): string {
  if (isLeadershipEpoch(fencingToken)) return fencingToken;
  return createHash("sha256").update(fencingToken).digest("hex").slice(0, 16);
}

/**
 * A new epoch for a deployment that no leader election fences (a `JobDeployer` used on its own,
 * a cluster without high availability): 12 random hex digits, so that a job deployed again with
 * the same id (restored by hand from a retained checkpoint) names its outputs apart from the
 * earlier run's.
 */
export function randomLeadershipEpoch(): string {
  return randomBytes(6).toString("hex");
}
