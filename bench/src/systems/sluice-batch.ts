/**
 * Sluice in the batch-shuffle case: the writer's process deploys a job with a BLOCKING exchange
 * (the sort-merge partition on disk) and runs its producer task; once the task finished the job
 * side deploys the consumer, whose descriptor the reader's process deploys on its own TaskExecutor
 * and reads the partition from the writer's data server.
 */
import type { RecordWriter, Task } from "@sluice/runtime";
import type {
  BatchParams,
  BatchReader,
  BatchReadResult,
  BatchWriteResult,
  BatchWriter,
} from "../batch-roles.js";
import { type KeyedRecord, makeKeyedRecords } from "../records.js";
import {
  type BlockingExchange,
  runConsumerLoop,
  runTask,
  SluiceProcess,
  type SluiceTransport,
  yieldToEventLoop,
} from "./sluice.js";
import { benchCode, exchangeOf } from "./sluice-roles.js";

/** What the writer reports of its worker's `Status.Shuffle.Netty.BatchShuffle` metrics. */
const BATCH_METRICS = [
  "FileBytesWritten",
  "BytesBeforeCompression",
  "BytesAfterCompression",
  "FilesCreated",
  "FilesDeleted",
];

function keyedExchange(params: BatchParams) {
  return exchangeOf({ channels: params.channels, selector: "keyed", recordKind: "keyed" });
}

export class SluiceBatchWriter implements BatchWriter {
  private sluice: SluiceProcess | undefined;
  private exchange: BlockingExchange | undefined;

  constructor(
    private readonly transport: SluiceTransport,
    private readonly params: BatchParams,
  ) {}

  async prepare(): Promise<void> {
    const p = this.params;
    this.sluice ??= await SluiceProcess.start(this.transport, p.config, benchCode(p.recordSize));
  }

  async write(): Promise<BatchWriteResult> {
    await this.prepare();
    const sluice = this.sluice as SluiceProcess;
    const p = this.params;
    const exchange = await sluice.deployBlockingExchange(keyedExchange(p));
    this.exchange = exchange;
    const records = makeKeyedRecords(p.recordSize);
    const mask = records.length - 1;
    const start = performance.now();
    const sent = await runTask(exchange.producer, (t) =>
      emitCount(t.writer<KeyedRecord>(), (i) => records[i & mask] as KeyedRecord, p),
    );
    // The job side deploys the consumer once the producer reported FINISHED, which a blocking
    // producer does only after its files are complete.
    const endpoint = await exchange.consumer;
    const writeMs = performance.now() - start;
    let keySum = 0;
    for (let i = 0; i < sent; i++) keySum = (keySum + (i & mask)) | 0;
    const batch: Record<string, number> = {};
    for (const metric of sluice.executor.metricGroup.registry.dump()) {
      if (metric.logicalScope.endsWith("BatchShuffle") && BATCH_METRICS.includes(metric.name)) {
        batch[metric.name] = metric.value;
      }
    }
    const numBytesOut = exchange.producer.partitions[0]?.metrics.numBytesOut;
    return { sent, keySum, writeMs, endpoint, extra: { numBytesOut, batchShuffle: batch } };
  }

  async cleanup(): Promise<void> {
    const exchange = this.exchange;
    this.exchange = undefined;
    await exchange?.retire();
  }

  async close(): Promise<void> {
    await this.cleanup();
    await this.sluice?.close();
    this.sluice = undefined;
  }
}

/**
 * The producer loop of a batch run: `params.records` records, emitted synchronously while the
 * writer is available (a sort-merge partition is unavailable while it spills), yielding every
 * `producerBatch` records.
 */
async function emitCount(
  writer: RecordWriter<KeyedRecord>,
  next: (i: number) => KeyedRecord,
  params: BatchParams,
): Promise<number> {
  for (let i = 0; i < params.records; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.emit(next(i));
    if ((i + 1) % params.producerBatch === 0) await yieldToEventLoop();
  }
  return params.records;
}

export class SluiceBatchReader implements BatchReader {
  private sluice: SluiceProcess | undefined;
  private task: Task | undefined;

  constructor(
    private readonly transport: SluiceTransport,
    private readonly params: BatchParams,
  ) {}

  async read(endpoint: unknown): Promise<BatchReadResult> {
    const p = this.params;
    this.sluice ??= await SluiceProcess.start(this.transport, p.config, benchCode(p.recordSize));
    const start = performance.now();
    const task = await this.sluice.executor.deployTask(endpoint);
    this.task = task;
    let keySum = 0;
    const result = await runTask(task, (t) =>
      runConsumerLoop(
        t.reader<number>(),
        (key) => {
          keySum = (keySum + key) | 0;
        },
        p.consumerBatch,
      ),
    );
    const readMs = performance.now() - start;
    const { numBytesIn, numBuffersIn } = task.gates[0]?.metrics ?? {};
    return { received: result.received, keySum, readMs, extra: { numBytesIn, numBuffersIn } };
  }

  async cleanup(): Promise<void> {
    const task = this.task;
    this.task = undefined;
    task?.cancel();
    await task?.terminated;
  }

  async close(): Promise<void> {
    await this.cleanup();
    await this.sluice?.close();
    this.sluice = undefined;
  }
}
