import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecutionAttemptID } from "@sluice/core";
import type { ExecutionVertex, JobDeployer, JobExecution } from "@sluice/runtime";
import { expect } from "vitest";
import { deployExchange, type Exchange, type ExchangeSpec } from "../exchange.js";
import { WorkerProcess } from "./worker-process.js";

/**
 * The suite's side of one test: the JobDeployer (with the plugin's ShuffleMaster) in the test
 * process, and worker processes each running a TaskExecutor of the plugin. Exchanges are jobs of
 * a producer vertex and its readers (HASH by key), deployed through the JobDeployer. Every worker
 * gets a folder of its own as `io.tmp.dirs`, removed when the test ends, so that the suite sees
 * exactly the files a worker's plugin keeps.
 */
export class TckCluster {
  private readonly workers: WorkerProcess[] = [];
  private readonly executions: JobExecution[] = [];
  private readonly tmpDirs: string[] = [];

  constructor(
    private readonly deployer: JobDeployer,
    private readonly config: Readonly<Record<string, unknown>>,
    private readonly configDir: string | undefined,
    private readonly name: string,
  ) {}

  /** Starts a worker process with the suite's configuration plus `extra`. */
  async startWorker(label: string, extra: Record<string, unknown> = {}): Promise<WorkerProcess> {
    const worker = new WorkerProcess(`${this.name}-${label}`);
    this.workers.push(worker);
    const dir = mkdtempSync(join(tmpdir(), `sluice-tck-${this.name}-${label}-`));
    this.tmpDirs.push(dir);
    await worker.init({ ...this.config, ...extra, "io.tmp.dirs": dir }, this.configDir);
    return worker;
  }

  /**
   * Starts a worker per label, each with `extra`, all at once: a worker's start is mostly its
   * process loading the runtime (and its slot threads loading it again), which overlaps. A worker
   * whose start failed is still killed and its folder removed by {@link shutdown}.
   */
  async startWorkers<const Labels extends readonly string[]>(
    labels: Labels,
    extra: Record<string, unknown> = {},
  ): Promise<{ -readonly [K in keyof Labels]: WorkerProcess }> {
    const workers = await Promise.all(labels.map((label) => this.startWorker(label, extra)));
    return workers as { -readonly [K in keyof Labels]: WorkerProcess };
  }

  /** Starts the two workers most cases use, `producer` and `consumer`, each with `extra`. */
  async startProducerAndConsumer(
    extra: Record<string, unknown> = {},
  ): Promise<{ producer: WorkerProcess; consumer: WorkerProcess }> {
    const [producer, consumer] = await this.startWorkers(["producer", "consumer"], extra);
    return { producer, consumer };
  }

  /**
   * Deploys an exchange with its producers on `producerWorker` and its consumer vertices on
   * `consumerWorker` (reader `i` on `consumerWorker[i]` when given one per reader).
   */
  async deploy(
    spec: ExchangeSpec,
    producerWorker: WorkerProcess,
    consumerWorker: WorkerProcess | readonly WorkerProcess[],
  ): Promise<Exchange> {
    const exchange = await deployExchange(
      this.deployer,
      this.name,
      spec,
      producerWorker,
      consumerWorker,
    );
    const { execution } = exchange;
    this.executions.push(execution);
    const consumerWorkers = Array.isArray(consumerWorker)
      ? (consumerWorker as readonly WorkerProcess[])
      : [consumerWorker as WorkerProcess];
    // The suite's control plane: a worker that dies takes its tasks with it.
    for (const worker of new Set([producerWorker, ...consumerWorkers])) {
      void worker.exited.then(({ code, signal }) =>
        execution.notifyTaskExecutorLost(
          worker,
          new Error(`worker ${worker.label} exited (code ${code}, signal ${signal})`),
        ),
      );
    }
    return exchange;
  }

  /** Ends every job, kills every worker still running and removes their folders (clean-up). */
  async shutdown(): Promise<void> {
    for (const worker of this.workers) await worker.releaseHeldCancels();
    for (const execution of this.executions.splice(0)) execution.cancel("the test ended");
    const workers = this.workers.splice(0);
    for (const worker of workers) worker.kill();
    await Promise.all(workers.map((worker) => worker.exited));
    // Deployments still held now fail at once: their worker is gone.
    for (const worker of workers) worker.releaseHeldSubmits();
    for (const dir of this.tmpDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}

/** Waits until the task of `vertex` is in `state`. */
export async function expectTaskState(vertex: ExecutionVertex, state: string): Promise<void> {
  await expect.poll(() => vertex.state, { timeout: 20_000 }).toBe(state);
}

/** Pipelined partitions are released once consumed, failed or cancelled. */
export async function expectPartitionsReleased(worker: WorkerProcess): Promise<void> {
  await expect.poll(() => worker.partitionsOccupyingLocalResources(), { timeout: 20_000 }).toBe(0);
}

/** The worker holds no partition any more, and no file is left in its `io.tmp.dirs`. */
export async function expectPartitionFilesDeleted(worker: WorkerProcess): Promise<void> {
  await expect
    .poll(
      async () => {
        const { partitions, files } = await worker.status();
        return { partitions, files };
      },
      { timeout: 20_000 },
    )
    .toEqual({ partitions: 0, files: [] });
}

/** The producer reports unavailable: it is blocked on backpressure. */
export async function expectBlocked(
  worker: WorkerProcess,
  attempt: ExecutionAttemptID,
): Promise<void> {
  await expect
    .poll(async () => (await worker.producerStatus(attempt)).available, { timeout: 20_000 })
    .toBe(false);
}

/** The consumer received at least `records` records (so its channels are connected). */
export async function expectReceived(
  worker: WorkerProcess,
  attempt: ExecutionAttemptID,
  records: number,
): Promise<void> {
  await expect
    .poll(async () => (await worker.consumerStatus(attempt)).total, { timeout: 20_000 })
    .toBeGreaterThanOrEqual(records);
}

/**
 * Closes each worker's TaskExecutor, all at once; each process must then exit on its own (no
 * leaked handles).
 */
export async function expectExitByThemselves(...workers: WorkerProcess[]): Promise<void> {
  const exits = await Promise.all(workers.map((worker) => worker.close()));
  workers.forEach((worker, i) => {
    expect(exits[i], `worker ${worker.label}`).toEqual({
      code: 0,
      signal: null,
      exitedByItself: true,
    });
  });
}

/** The first subtask, which a one-subtask vertex always has. */
export function only(vertices: readonly ExecutionVertex[]): ExecutionVertex {
  const [first] = vertices;
  if (first === undefined) throw new Error("the vertex has no subtask");
  return first;
}
