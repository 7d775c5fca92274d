/**
 * Sluice as an application runs it: a TaskExecutor per process (the plugin named by
 * `shuffle-service-factory.class`, loaded by the ShuffleServiceLoader), and in the producer's
 * process a JobDeployer that deploys each run's job of a producer vertex and a consumer vertex.
 * The producer's task is deployed on this process's TaskExecutor; the consumer's task deployment
 * descriptor goes to the consumer's process as JSON, which deploys it on its own TaskExecutor.
 * Both sides drive their measured loop inside `task.run`.
 */
import { fileURLToPath } from "node:url";
import { IllegalStateError, ResourceID } from "@sluice/core";
import {
  Configuration,
  JobDeployer,
  type JobExecution,
  JobGraph,
  type PartitionerSpec,
  PollStatus,
  type RecordReader,
  type RecordWriter,
  type Task,
  TaskExecutor,
  type TaskExecutorOptions,
  TaskNotFoundError,
} from "@sluice/runtime";
import {
  ShuffleServiceLoader,
  TaskDeploymentDescriptorCodec,
  type TaskDeploymentDescriptorJSON,
  type TaskExecutorGateway,
} from "@sluice/runtime/plugin";
import { ResultPartitionType } from "@sluice/runtime-api";
import { ArrivalClock } from "./arrival-clock.js";

export type SluiceTransport = "tcp" | "ws" | "local" | "remote";
export type RawConfig = Record<string, unknown>;

/**
 * Each transport's plugin (`tcp`, `ws` and `remote` are the loader's aliases of the bundled
 * plugins; `remote` keeps BLOCKING partitions on shuffle workers).
 */
const FACTORY_CLASS: Readonly<Record<SluiceTransport, string>> = {
  tcp: "tcp",
  ws: "ws",
  local: "@sluice/network#LocalShuffleServiceFactory",
  remote: "remote",
};

/** bench/ (this file is dist/systems/sluice.js): its package.json lists the plugins. */
const LOADER = { applicationDirs: [fileURLToPath(new URL("../..", import.meta.url))] };

function configurationOf(transport: SluiceTransport, config: RawConfig): Configuration {
  return new Configuration({
    "shuffle-service-factory.class": FACTORY_CLASS[transport],
    "taskmanager.host": "127.0.0.1",
    "taskmanager.data.bind-host": "127.0.0.1",
    "taskmanager.data.port": 0,
    ...config,
  });
}

/** Why the WS plugin cannot be loaded in this checkout, or undefined when it can. */
export async function wsAvailability(): Promise<string | undefined> {
  try {
    await ShuffleServiceLoader.loadShuffleServiceFactory(configurationOf("ws", {}), LOADER);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The record types a bench process registers with its TaskExecutor. */
export type SluiceCode = Pick<TaskExecutorOptions, "serializers" | "keySelectors">;

/** How one run moves records from the producer to the consumer. */
export interface ExchangeSpec {
  /** Subpartitions of the producer's partition, read by the consumer's one gate. */
  readonly channels: number;
  readonly partitioner: PartitionerSpec;
  readonly serializer: string;
}

/** A bench process's Sluice: its TaskExecutor and, in a process that deploys runs, the job side. */
export class SluiceProcess {
  private deployer: JobDeployer | undefined;

  /** The job side's ShuffleMaster, once this process deployed a run. */
  get shuffleMaster(): JobDeployer["master"] | undefined {
    return this.deployer?.master;
  }
  private scraper: NodeJS.Timeout | undefined;

  private constructor(
    readonly executor: TaskExecutor,
    private readonly configuration: Configuration,
  ) {}

  /**
   * @param scrapeIntervalMs when set, the process fetches every HTTP endpoint of its metric
   *   reporters this often (the metrics-exported variant: a Prometheus server's scrapes).
   */
  static async start(
    transport: SluiceTransport,
    config: RawConfig,
    code: SluiceCode,
    scrapeIntervalMs?: number,
  ): Promise<SluiceProcess> {
    const configuration = configurationOf(transport, config);
    const executor = await TaskExecutor.start(configuration, { ...code, loader: LOADER });
    const process = new SluiceProcess(executor, configuration);
    if (scrapeIntervalMs !== undefined) process.scrape(scrapeIntervalMs);
    return process;
  }

  private scrape(intervalMs: number): void {
    const urls = this.executor.metricGroup.registry.reporters
      .map(({ reporter }) => (reporter as { url?: unknown }).url)
      .filter((url): url is string => typeof url === "string");
    if (urls.length === 0) {
      throw new IllegalStateError(
        "metrics scraping needs a reporter with an endpoint (metrics.reporter.prom.port)",
      );
    }
    this.scraper = setInterval(() => {
      for (const url of urls) {
        void fetch(url)
          .then((response) => response.text())
          .catch(() => {}); // a scrape racing the close: nothing to measure
      }
    }, intervalMs);
    this.scraper.unref();
  }

  /**
   * Deploys one run's job: the producer task on this process's TaskExecutor (deployed, not run:
   * the caller runs it), and the consumer's task deployment descriptor as JSON, for the process
   * that runs the consumer. That process reports to the parent, not to this job: so the consumer
   * is placed on a gateway that only keeps its descriptor (its location is never read, as the
   * consumer produces nothing).
   */
  async deployExchange(spec: ExchangeSpec): Promise<Exchange> {
    const job = await this.deployJob(spec, ResultPartitionType.PIPELINED_BOUNDED);
    // A pipelined consumer is deployed with its producer.
    const descriptor = job.deployedConsumer();
    if (descriptor === undefined) {
      const { error } = await job.execution.terminated; // deploying failed the job
      throw error ?? new IllegalStateError("the bench job deployed no consumer");
    }
    return {
      producer: job.producer,
      consumer: descriptor,
      retire: (ms) => retire(job.producer, job.execution, ms),
    };
  }

  /**
   * Deploys one run's job with a BLOCKING exchange: the producer task on this process's
   * TaskExecutor; the job side deploys the consumer (here: hands out its descriptor) only once the
   * producer finished, its partition complete on disk.
   */
  async deployBlockingExchange(spec: ExchangeSpec): Promise<BlockingExchange> {
    const job = await this.deployJob(spec, ResultPartitionType.BLOCKING);
    const { execution } = job;
    const failed = execution.terminated.then(({ error }) => {
      throw error ?? new IllegalStateError("the bench job ended before its consumer was deployed");
    });
    return {
      producer: job.producer,
      consumer: Promise.race([job.consumer, failed]),
      retire: async () => {
        // The consumer reports to the parent, not to this job: end the job, which releases the
        // partition (and so deletes its files).
        execution.cancel("the bench run is over");
        await execution.terminated;
      },
    };
  }

  /**
   * The job of one run, deployed: the producer task here, the consumer's descriptor kept when the
   * job side deploys it (with the producer when pipelined, after it when blocking).
   */
  private async deployJob(spec: ExchangeSpec, partitionType: ResultPartitionType) {
    this.deployer ??= await JobDeployer.start(this.configuration, { loader: LOADER });
    const graph = new JobGraph("bench exchange");
    const producer = graph.addVertex({ name: "Producer", parallelism: 1 });
    const consumer = graph.addVertex({ name: "Consumer", parallelism: 1 });
    const { partitioner, serializer, channels } = spec;
    graph.connect(producer, consumer, {
      partitioner,
      serializer,
      numberOfSubpartitions: channels,
      partitionType,
    });
    const executor = this.executor;
    let task: Task | undefined;
    let descriptor: TaskDeploymentDescriptorJSON | undefined;
    let consumerDeployed: (descriptor: TaskDeploymentDescriptorJSON) => void = () => {};
    const deployedConsumer = new Promise<TaskDeploymentDescriptorJSON>((resolve) => {
      consumerDeployed = resolve;
    });
    const here: TaskExecutorGateway = {
      location: executor.location,
      submitTask: async (tdd, jobMaster) => {
        task = await executor.deployTask(tdd, jobMaster);
      },
      cancelTask: (attempt) => executor.cancelTask(attempt),
      updatePartitions: (attempt, infos) => executor.updatePartitions(attempt, infos),
      releasePartitions: (jobId, ids) => executor.releasePartitions(jobId, ids),
    };
    const elsewhere: TaskExecutorGateway = {
      location: { resourceId: new ResourceID(), host: "127.0.0.1", dataPort: -1 },
      submitTask: async (tdd) => {
        descriptor = TaskDeploymentDescriptorCodec.toJSON(tdd);
        consumerDeployed(descriptor);
      },
      cancelTask: async (attempt) => {
        throw new TaskNotFoundError(`the consumer ${attempt} runs in another process`);
      },
      updatePartitions: async () => {
        throw new IllegalStateError("the bench deploys producers first: nothing to update");
      },
      releasePartitions: async () => {}, // the consumer holds no partition of this job
    };
    const execution = await this.deployer.deploy(graph, (v) => (v === producer ? here : elsewhere));
    if (task === undefined) {
      const { error } = await execution.terminated; // deploying failed the job
      throw error ?? new IllegalStateError("the bench job deployed no producer");
    }
    return {
      producer: task,
      execution,
      consumer: deployedConsumer,
      deployedConsumer: () => descriptor,
    };
  }

  /** Ends the running jobs, then closes the TaskExecutor (every buffer back in its pool). */
  async close(): Promise<void> {
    clearInterval(this.scraper);
    await this.deployer?.close();
    await this.executor.close();
  }
}

/** One run's job, as the producer's process holds it. */
export interface Exchange {
  /** The producer task, deployed on this process's TaskExecutor. */
  readonly producer: Task;
  /** The consumer's task deployment descriptor. */
  readonly consumer: TaskDeploymentDescriptorJSON;
  /**
   * Ends the job once the consumer read the producer's partition (waiting at most `timeoutMs`,
   * default 5 s): the job is canceled (the consumer's process ends its task itself), which
   * cancels the producer if it still runs and releases its partition.
   */
  retire(timeoutMs?: number): Promise<void>;
}

/** One run's job with a BLOCKING exchange, as the producer's process holds it. */
export interface BlockingExchange {
  /** The producer task, deployed on this process's TaskExecutor. */
  readonly producer: Task;
  /** The consumer's descriptor, once the producer finished (rejects when the job failed). */
  readonly consumer: Promise<TaskDeploymentDescriptorJSON>;
  /** Ends the job (after the consumer read the partition): the partition and its files go. */
  retire(): Promise<void>;
}

async function retire(producer: Task, execution: JobExecution, timeoutMs = 5_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
  });
  await Promise.race([producer.partitionsConsumed, timeout]);
  clearTimeout(timer);
  execution.cancel("the bench run is over");
  await execution.terminated;
}

/** Runs `task` with `body` as its code; resolves with what `body` returned once the task ended. */
export async function runTask<R>(task: Task, body: (task: Task) => Promise<R>): Promise<R> {
  let result: R | undefined;
  await task.run(async (running) => {
    result = await body(running);
  });
  return result as R;
}

export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The producer task loop (see "Flink's threads on Node's event loop" in docs/architecture.md):
 * emit synchronously while the writer is available, await only when it is not, and yield to the
 * event loop after every `batch` records (so the data server, the credit messages and the
 * OutputFlusher timer get their turn). Emits `next(i)` until `durationMs` passed; the task then
 * finishes the partition (EndOfPartition).
 */
export async function runProducerLoop<T>(
  writer: RecordWriter<T>,
  next: (i: number) => T,
  durationMs: number,
  batch: number,
): Promise<{ sent: number; elapsedMs: number }> {
  const start = performance.now();
  const end = start + durationMs;
  let sent = 0;
  for (;;) {
    for (let i = 0; i < batch; i++) {
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.emit(next(sent));
      sent++;
    }
    if (performance.now() >= end) break;
    await yieldToEventLoop();
  }
  return { sent, elapsedMs: performance.now() - start };
}

/** What a consumer loop measured. */
export interface ConsumeResult {
  readonly received: number;
  /** Records received after the first poll that returned records (the timed ones). */
  readonly timedRecords: number;
  /** ms between the first and the last poll that returned records. */
  readonly timedMs: number;
}

/**
 * The consumer task loop: poll records synchronously in batches, await the gate only when it has
 * nothing, yield between batches; stop at EndOfPartition of every channel. Throughput is timed
 * from the first poll that returned records to the last one.
 */
export async function runConsumerLoop<T>(
  reader: RecordReader<T>,
  onRecord: (record: T) => void,
  batch: number,
): Promise<ConsumeResult> {
  const clock = new ArrivalClock();
  let count = 0;
  const counting = (record: T) => {
    count++;
    onRecord(record);
  };
  for (;;) {
    const before = count;
    const status = reader.pollRecords(counting, batch);
    if (count > before) clock.arrived(count);
    if (status === PollStatus.END_OF_INPUT) break;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await yieldToEventLoop();
  }
  return { received: count, ...clock.timed(count) };
}
