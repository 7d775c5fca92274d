import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Proof that the shuffle manager assigned a partition to a worker, for one job: HMAC-SHA256 of
 * `<job id>/<result partition id>` keyed with the worker's secret, which the worker draws at
 * start and tells only the manager it registers with. The manager puts the token in the
 * partition's descriptor; the worker recomputes it for every push (OPEN) and checksum query
 * (STAT), so it needs no list of assignments and no round trip to the manager on the deploy path,
 * and nobody without the descriptor can store or query anything on it. A restarted worker draws
 * a new secret: tokens of the earlier start are worthless there.
 */
export function partitionAccessToken(secret: string, jobId: string, partitionId: string): string {
  return createHmac("sha256", Buffer.from(secret, "hex"))
    .update(`${jobId}/${partitionId}`)
    .digest("hex");
}

/** True when `token` is the access token of this job's partition (compared in constant time). */
export function isPartitionAccessToken(
  token: string,
  secret: string,
  jobId: string,
  partitionId: string,
): boolean {
  const expected = Buffer.from(partitionAccessToken(secret, jobId, partitionId), "hex");
  const given = Buffer.from(token, "hex");
  return given.byteLength === expected.byteLength && timingSafeEqual(given, expected);
}

/** True when two secrets are equal (compared in constant time). */
export function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.byteLength === right.byteLength && timingSafeEqual(left, right);
}

/** A new worker secret: 32 random bytes as 64 hex digits. */
export function newWorkerSecret(): string {
  return randomBytes(32).toString("hex");
}
