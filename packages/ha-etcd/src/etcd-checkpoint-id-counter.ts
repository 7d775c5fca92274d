import { IllegalArgumentError, IllegalStateError } from "@sluice/core";
import { type CheckpointIDCounter, HighAvailabilityStateError } from "@sluice/runtime-api";
import type { EtcdKv } from "./client/etcd-kv.js";
import { absent, modRevisionIs } from "./client/kv-requests.js";
import type { LeadershipFence } from "./leadership-fence.js";

/** How often a compare-and-set is retried when the counter changed under it. */
const MAX_ATTEMPTS = 16;

/**
 * The checkpoint id counter of one job on etcd (Flink's `ZooKeeperCheckpointIDCounter`): the key
 * `checkpoint-id-counter/<job id>` holds the next id; each increment is a fenced
 * compare-and-set on the key's mod revision, so ids are never handed out twice, not even across
 * a failover.
 */
export class EtcdCheckpointIDCounter implements CheckpointIDCounter {
  private readonly key: string;

  constructor(
    private readonly kv: EtcdKv,
    private readonly fence: LeadershipFence,
    private readonly jobId: string,
  ) {
    this.key = `checkpoint-id-counter/${jobId}`;
  }

  async getAndIncrement(): Promise<bigint> {
    const what = `incrementing the checkpoint id counter of job ${this.jobId}`;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const { value, modRevision } = await this.read();
      const outcome = await this.fence.commit(
        what,
        [{ put: { key: this.key, value: (value + 1n).toString() } }],
        [modRevision === undefined ? absent(this.key) : modRevisionIs(this.key, modRevision)],
      );
      if (outcome === "committed") return value;
    }
    throw new IllegalStateError(
      `${what}: the counter changed under ${MAX_ATTEMPTS} compare-and-set attempts in a row`,
    );
  }

  async get(): Promise<bigint> {
    return (await this.read()).value;
  }

  async setCount(next: bigint): Promise<void> {
    if (next < 1n) {
      throw new IllegalArgumentError(`the next checkpoint id must be at least 1, got ${next}`);
    }
    await this.fence.commit(`setting the checkpoint id counter of job ${this.jobId}`, [
      { put: { key: this.key, value: next.toString() } },
    ]);
  }

  async shutdown(discard: boolean): Promise<void> {
    if (!discard) return;
    await this.fence.commit(`removing the checkpoint id counter of job ${this.jobId}`, [
      { deleteRange: { key: this.key } },
    ]);
  }

  private async read(): Promise<{ value: bigint; modRevision: string | undefined }> {
    const kv = await this.kv.get(`reading ${this.key}`, this.key);
    if (kv === undefined) return { value: 1n, modRevision: undefined };
    if (!/^\d{1,30}$/.test(kv.value)) {
      throw new HighAvailabilityStateError(
        `etcd key ${this.key} holds ${JSON.stringify(kv.value.slice(0, 40))}, not a checkpoint id`,
      );
    }
    return { value: BigInt(kv.value), modRevision: kv.modRevision };
  }
}
