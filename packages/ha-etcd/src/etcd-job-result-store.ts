import { IllegalStateError } from "@sluice/core";
import {
  HighAvailabilityStateError,
  type JobResultEntry,
  type JobResultStore,
} from "@sluice/runtime-api";
import type { EtcdKv } from "./client/etcd-kv.js";
import { absent, modRevisionIs } from "./client/kv-requests.js";
import type { LeadershipFence } from "./leadership-fence.js";
import { checkName } from "./state-files.js";

const PREFIX = "jobresults/";

/** What the key `jobresults/<job id>` holds (a few hundred bytes: kept in etcd itself). */
interface StoredJobResult {
  readonly entry: JobResultEntry;
  readonly clean: boolean;
}

/**
 * The job result store on etcd (Flink's `FileSystemJobResultStore`, with the entry in the
 * coordination service instead of a file: it is small and must be read by every new leader).
 * The key `jobresults/<job id>` holds the entry and whether it is clean; every write is fenced
 * by the leadership, and creating an entry also requires the key to be absent.
 */
export class EtcdJobResultStore implements JobResultStore {
  constructor(
    private readonly kv: EtcdKv,
    private readonly fence: LeadershipFence,
  ) {}

  async createDirtyResult(entry: JobResultEntry): Promise<void> {
    const key = PREFIX + checkName("a job id", entry.jobId);
    const stored: StoredJobResult = { entry, clean: false };
    const outcome = await this.fence.commit(
      `storing the result of job ${entry.jobId}`,
      [{ put: { key, value: JSON.stringify(stored) } }],
      [absent(key)],
    );
    if (outcome === "condition-failed") {
      throw new IllegalStateError(`job ${entry.jobId} has a stored result already`);
    }
  }

  async markResultAsClean(jobId: string): Promise<void> {
    const key = PREFIX + checkName("a job id", jobId);
    const what = `marking the result of job ${jobId} clean`;
    const read = await this.read(key);
    if (read === undefined) {
      throw new IllegalStateError(`job ${jobId} has no stored result to mark clean`);
    }
    if (read.stored.clean) return;
    const stored: StoredJobResult = { entry: read.stored.entry, clean: true };
    const outcome = await this.fence.commit(
      what,
      [{ put: { key, value: JSON.stringify(stored) } }],
      [modRevisionIs(key, read.modRevision)],
    );
    if (outcome === "condition-failed") {
      throw new IllegalStateError(`${what}: the entry changed while it was being marked`);
    }
  }

  async hasJobResultEntry(jobId: string): Promise<boolean> {
    return (await this.stored(jobId)) !== undefined;
  }

  async hasDirtyJobResultEntry(jobId: string): Promise<boolean> {
    return (await this.stored(jobId))?.clean === false;
  }

  async hasCleanJobResultEntry(jobId: string): Promise<boolean> {
    return (await this.stored(jobId))?.clean === true;
  }

  async getJobResult(jobId: string): Promise<JobResultEntry | undefined> {
    return (await this.stored(jobId))?.entry;
  }

  async getDirtyResults(): Promise<readonly JobResultEntry[]> {
    const { kvs } = await this.kv.range("listing the job results", { key: PREFIX, prefix: true });
    return [...kvs]
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map((kv) => parse(kv.key, kv.value))
      .filter((stored) => !stored.clean)
      .map((stored) => stored.entry);
  }

  private async stored(jobId: string): Promise<StoredJobResult | undefined> {
    return (await this.read(PREFIX + checkName("a job id", jobId)))?.stored;
  }

  private async read(
    key: string,
  ): Promise<{ stored: StoredJobResult; modRevision: string } | undefined> {
    const kv = await this.kv.get(`reading ${key}`, key);
    if (kv === undefined) return undefined;
    return { stored: parse(key, kv.value), modRevision: kv.modRevision };
  }
}

/**
 * Reads a stored entry.
 *
 * @throws HighAvailabilityStateError naming the key when it is not an entry.
 */
function parse(key: string, value: string): StoredJobResult {
  let stored: unknown;
  try {
    stored = JSON.parse(value);
  } catch (error) {
    throw new HighAvailabilityStateError(`etcd key ${key} holds no job result (not JSON)`, {
      cause: error,
    });
  }
  const entry = (stored as { entry?: unknown } | null)?.entry as JobResultEntry | undefined;
  const clean = (stored as { clean?: unknown } | null)?.clean;
  if (
    typeof entry !== "object" ||
    entry === null ||
    typeof entry.jobId !== "string" ||
    !["FINISHED", "FAILED", "CANCELED"].includes(entry.status) ||
    typeof entry.timestamp !== "number" ||
    typeof clean !== "boolean"
  ) {
    throw new HighAvailabilityStateError(`etcd key ${key} holds no job result: ${value}`);
  }
  return { entry, clean };
}
