import {
  HighAvailabilityStateError,
  type JobGraphStore,
  type JsonValue,
} from "@sluice/runtime-api";
import type { Namespace } from "etcd3";
import { etcdCall } from "./etcd-call.js";
import type { LeadershipFence } from "./leadership-fence.js";
import { checkName, type StateFiles } from "./state-files.js";

const PREFIX = "jobgraphs/";

/**
 * The job graph store on etcd (Flink's `DefaultJobGraphStore` over a state handle store): each
 * job graph is a file under `<storageDir>/<cluster-id>/jobgraphs/`, and the key
 * `jobgraphs/<job id>` holds its path. Writes are fenced by the leadership.
 */
export class EtcdJobGraphStore implements JobGraphStore {
  constructor(
    private readonly namespace: Namespace,
    private readonly fence: LeadershipFence,
    private readonly files: StateFiles,
    private readonly endpoints: readonly string[],
  ) {}

  async putJobGraph(jobId: string, jobGraph: JsonValue): Promise<void> {
    const key = PREFIX + checkName("a job id", jobId);
    const what = `storing the job graph of ${jobId}`;
    this.fence.leadership(what);
    const previous = await this.pointer(key);
    const file = await this.files.write("jobgraphs", jobId, { jobId, jobGraph });
    try {
      await this.fence.commit(what, [this.namespace.put(key).value(file)]);
    } catch (error) {
      await this.files.remove(file);
      throw error;
    }
    if (previous !== undefined && previous !== file) await this.files.remove(previous);
  }

  async recoverJobGraph(jobId: string): Promise<JsonValue | undefined> {
    const key = PREFIX + checkName("a job id", jobId);
    const file = await this.pointer(key);
    if (file === undefined) return undefined;
    const record = await this.files.read(key, file);
    if (typeof record !== "object" || record === null || !("jobGraph" in record)) {
      throw new HighAvailabilityStateError(
        `etcd key ${key} points to ${file}, which holds no job graph`,
      );
    }
    return record.jobGraph as JsonValue;
  }

  async removeJobGraph(jobId: string): Promise<void> {
    const key = PREFIX + checkName("a job id", jobId);
    const what = `removing the job graph of ${jobId}`;
    const file = await this.pointer(key);
    if (file === undefined) return;
    await this.fence.commit(what, [this.namespace.delete().key(key)]);
    await this.files.remove(file);
  }

  async getJobIds(): Promise<readonly string[]> {
    const keys = await etcdCall("listing the job graphs", this.endpoints, () =>
      this.namespace.getAll().prefix(PREFIX).keys(),
    );
    return keys.map((key) => key.slice(PREFIX.length)).sort();
  }

  private pointer(key: string): Promise<string | undefined> {
    return etcdCall(`reading ${key}`, this.endpoints, async () => {
      const value = await this.namespace.get(key).string();
      return value ?? undefined;
    });
  }
}
