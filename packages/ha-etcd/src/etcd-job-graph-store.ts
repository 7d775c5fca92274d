import {
  HighAvailabilityStateError,
  type JobGraphStore,
  type JsonValue,
} from "@sluice/runtime-api";
import type { EtcdKv } from "./client/etcd-kv.js";
import type { LeadershipFence } from "./leadership-fence.js";
import { checkName, type StateFiles } from "./state-files.js";

const PREFIX = "jobgraphs/";
/** The folder of the job graph files, under the cluster's folder. */
const FOLDER = "jobgraphs";

/**
 * The job graph store on etcd (Flink's `DefaultJobGraphStore` over a state handle store): each
 * job graph is a file under `<storageDir>/<cluster-id>/jobgraphs/`, and the key
 * `jobgraphs/<job id>` holds its path. Writes are fenced by the leadership. A key that names a
 * file outside that folder is refused (`SLUICE_ERR_HA_STATE`): nothing outside is read or
 * deleted.
 */
export class EtcdJobGraphStore implements JobGraphStore {
  constructor(
    private readonly kv: EtcdKv,
    private readonly fence: LeadershipFence,
    private readonly files: StateFiles,
  ) {}

  async putJobGraph(jobId: string, jobGraph: JsonValue): Promise<void> {
    const key = PREFIX + checkName("a job id", jobId);
    const what = `storing the job graph of ${jobId}`;
    this.fence.leadership(what);
    const previous = await this.pointer(key);
    // A replaced file is removed below: refuse before writing anything if it is not ours.
    if (previous !== undefined) await this.files.confine(key, previous, FOLDER);
    const file = await this.files.write(FOLDER, jobId, { jobId, jobGraph });
    try {
      await this.fence.commit(what, [{ put: { key, value: file } }]);
    } catch (error) {
      await this.files.discard(file);
      throw error;
    }
    if (previous !== undefined && previous !== file) {
      await this.files.remove(key, previous, FOLDER);
    }
  }

  async recoverJobGraph(jobId: string): Promise<JsonValue | undefined> {
    const key = PREFIX + checkName("a job id", jobId);
    const file = await this.pointer(key);
    if (file === undefined) return undefined;
    const record = await this.files.read(key, file, FOLDER);
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
    await this.files.confine(key, file, FOLDER);
    await this.fence.commit(what, [{ deleteRange: { key } }]);
    await this.files.remove(key, file, FOLDER);
  }

  async getJobIds(): Promise<readonly string[]> {
    const { kvs } = await this.kv.range("listing the job graphs", { key: PREFIX, prefix: true });
    return kvs.map((kv) => kv.key.slice(PREFIX.length)).sort();
  }

  private async pointer(key: string): Promise<string | undefined> {
    return (await this.kv.get(`reading ${key}`, key))?.value;
  }
}
