/**
 * Fixed amounts of work for instruction counts: each command moves a given number of records
 * through one Sluice path in this one process and exits, so that `valgrind --tool=callgrind` (or
 * `perf stat -e instructions`, where the machine supports it) counts the same work however loaded
 * the machine is. The difference between two record counts, divided by the difference in records,
 * is the path's instructions per record; two builds compared that way give an A/B that the load
 * of a shared machine does not move (see "How to run" in docs/benchmarks.md).
 *
 * ```sh
 * node bench/dist/fixed-work.js exchange --records 200000 --size 100 --channels 4 --selector keyed
 * valgrind --tool=callgrind --callgrind-out-file=/dev/null \
 *   node --single-threaded bench/dist/fixed-work.js exchange --records 200000 --size 32768
 * ```
 *
 * `exchange`: one producer task and one consumer task on one TaskExecutor of the in-process
 * (local) plugin, records of `--size` bytes (the bench's keyed records) over `--channels`
 * subpartitions, keyed or round-robin, or 12-byte int64 records with `--int64`; the buffer timeout
 * is disabled, so only full buffers and the end of the data flush, and no timer makes two runs
 * differ. Every record is checked (count and key sum).
 *
 * `partition`: the same records through a RecordWriter into a PipelinedResultPartition and back
 * through record deserializers, synchronously on one stack (`cases/partition-work.ts`). With
 * `--shared` the segments are those of a `SharedNetworkMemory` (as a task manager's whose slots
 * run on threads); with `--bytes` the records are `Uint8Array`s of `--size` bytes through the
 * `bytes` serializer, each read back as a copy (case 13's records).
 */
import { parseArgs } from "node:util";
import { partitionWork } from "./cases/partition-work.js";
import { type KeyedRecord, makeKeyedRecords } from "./records.js";
import { runConsumerLoop, runTask, SluiceProcess, yieldToEventLoop } from "./systems/sluice.js";
import { benchCode, exchangeOf } from "./systems/sluice-roles.js";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    records: { type: "string", default: "100000" },
    size: { type: "string", default: "100" },
    channels: { type: "string", default: "4" },
    selector: { type: "string", default: "keyed" },
    int64: { type: "boolean", default: false },
    shared: { type: "boolean", default: false },
    bytes: { type: "boolean", default: false },
    batch: { type: "string", default: "1024" },
  },
});

async function exchange(): Promise<void> {
  const records = Number(values.records);
  const size = Number(values.size);
  const channels = Number(values.channels);
  const selector = values.selector === "rebalance" ? "rebalance" : "keyed";
  const int64 = values.int64 === true;
  const batch = Number(values.batch);
  const sluice = await SluiceProcess.start(
    "local",
    { "execution.buffer-timeout.enabled": false },
    benchCode(size),
  );
  try {
    const spec = exchangeOf({ channels, selector, recordKind: int64 ? "int64" : "keyed" });
    const deployed = await sluice.deployExchange(spec);
    const consumer = await sluice.executor.deployTask(deployed.consumer);
    const keyed = makeKeyedRecords(Math.max(size, 4));
    const mask = keyed.length - 1;
    let keySum = 0;
    const [sent, received] = await Promise.all([
      runTask(deployed.producer, async (task) => {
        const writer = task.writer<KeyedRecord | bigint>();
        for (let i = 0; i < records; ) {
          const end = Math.min(records, i + batch);
          for (; i < end; i++) {
            if (!writer.isAvailable()) await writer.getAvailableFuture();
            writer.emit(int64 ? 7n : (keyed[i & mask] as KeyedRecord));
          }
          await yieldToEventLoop();
        }
        return records;
      }),
      runTask(consumer, (task) =>
        runConsumerLoop(
          task.reader<number | bigint>(),
          (record) => {
            if (typeof record === "number") keySum = (keySum + record) | 0;
          },
          4096,
        ),
      ),
    ]);
    await deployed.retire();
    let expectedKeySum = 0;
    for (let i = 0; !int64 && i < records; i++) expectedKeySum = (expectedKeySum + (i & mask)) | 0;
    if (received.received !== sent || keySum !== expectedKeySum) {
      throw new Error(
        `sent ${sent} records (key sum ${expectedKeySum}) but received ${received.received} (key sum ${keySum})`,
      );
    }
    console.log(`exchange: ${sent} records of ${int64 ? "int64" : `${size} B`} verified`);
  } finally {
    await sluice.close();
  }
}

async function partition(): Promise<void> {
  const records = Number(values.records);
  await partitionWork({
    records,
    size: Number(values.size),
    channels: Number(values.channels),
    selector: values.selector,
    int64: values.int64 === true,
    shared: values.shared === true,
    bytes: values.bytes === true,
  });
  const what = values.int64 === true ? "int64" : `${values.size} B`;
  console.log(`partition: ${records} records of ${what} verified`);
}

const commands: Record<string, () => Promise<void>> = { exchange, partition };
const command = commands[positionals[0] ?? ""];
if (command === undefined) {
  console.error(`usage: fixed-work.js <${Object.keys(commands).join("|")}> [options]`);
  process.exit(2);
}
await command();
