import { IllegalArgumentError, IllegalStateError } from "@sluice/core";
import type { CheckpointIDCounter } from "@sluice/runtime-api";
import type { Namespace } from "etcd3";
import { etcdCall } from "./etcd-call.js";
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
    private readonly namespace: Namespace,
    private readonly fence: LeadershipFence,
    private readonly endpoints: readonly string[],
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
        [this.namespace.put(this.key).value((value + 1n).toString())],
        [{ key: this.key, modRevision }],
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
      this.namespace.put(this.key).value(next.toString()),
    ]);
  }

  async shutdown(discard: boolean): Promise<void> {
    if (!discard) return;
    await this.fence.commit(`removing the checkpoint id counter of job ${this.jobId}`, [
      this.namespace.delete().key(this.key),
    ]);
  }

  private async read(): Promise<{ value: bigint; modRevision: string | undefined }> {
    const result = await etcdCall(`reading ${this.key}`, this.endpoints, () =>
      this.namespace.get(this.key).exec(),
    );
    const kv = result.kvs[0];
    return kv === undefined
      ? { value: 1n, modRevision: undefined }
      : { value: BigInt(kv.value.toString()), modRevision: kv.mod_revision };
  }
}
