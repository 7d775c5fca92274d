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
import { unpin } from "../harness.js";
import { type KeyedRecord, makeKeyedRecords } from "../records.js";
import {
  type BlockingExchange,
  runConsumerLoop,
  runTask,
  type SluiceTransport,
  yieldToEventLoop,
} from "./sluice.js";
import { exchangeOf, sideParams } from "./sluice-roles.js";
import { cancelTask, retireExchange, SluiceSide } from "./sluice-side.js";

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
  private readonly side: SluiceSide<BlockingExchange>;
  private unpinned = false;

  constructor(
    transport: SluiceTransport,
    private readonly params: BatchParams,
  ) {
    this.side = new SluiceSide<BlockingExchange>(transport, sideParams(params), retireExchange);
  }

  async prepare(): Promise<void> {
    await this.side.process();
  }

  async write(): Promise<BatchWriteResult> {
    const sluice = await this.side.process();
    const p = this.params;
    const exchange = await sluice.deployBlockingExchange(keyedExchange(p));
    this.side.deployed = exchange;
    this.unpinShuffleWorkers(sluice);
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

  /**
   * The remote shuffle's worker, forked by this process's ShuffleMaster, inherited its CPU pin:
   * it gets every CPU, as on a host of its own (once, before the first measured write).
   */
  private unpinShuffleWorkers(sluice: { shuffleMaster: unknown }): void {
    if (this.unpinned) return;
    this.unpinned = true;
    const master = sluice.shuffleMaster as
      | { embeddedWorkerProcesses?: () => readonly { child: { pid?: number } }[] }
      | undefined;
    for (const worker of master?.embeddedWorkerProcesses?.() ?? []) {
      if (worker.child.pid !== undefined) unpin(worker.child.pid);
    }
  }

  cleanup(): Promise<void> {
    return this.side.cleanup();
  }

  close(): Promise<void> {
    return this.side.close();
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
  private readonly side: SluiceSide<Task>;

  constructor(
    transport: SluiceTransport,
    private readonly params: BatchParams,
  ) {
    this.side = new SluiceSide(transport, sideParams(params), cancelTask);
  }

  async read(endpoint: unknown): Promise<BatchReadResult> {
    const p = this.params;
    const sluice = await this.side.process();
    const start = performance.now();
    const task = await sluice.executor.deployTask(endpoint);
    this.side.deployed = task;
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

  cleanup(): Promise<void> {
    return this.side.cleanup();
  }

  close(): Promise<void> {
    return this.side.close();
  }
}
