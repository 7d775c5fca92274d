// One "slot thread" of the cross-thread channel tests: a NetworkBufferPool over the shared
// memory, a ResultPartitionManager and the TaskSlotPartitionProvider, driven by the test thread
// (which routes requests between the threads, as the runtime does). Plain JavaScript that
// imports the built packages: worker threads do not run TypeScript.
import { setImmediate as turn } from "node:timers/promises";
import { parentPort, workerData } from "node:worker_threads";
import {
  NetworkBufferPool,
  ResultPartitionID,
  reconstructError,
  SharedNetworkMemory,
  ThreadDoorbell,
} from "@sluice/core";
import { ResultPartitionManager } from "@sluice/network/plugin";
import {
  buildLocalInputChannel,
  buildPipelinedResultPartition,
  buildSingleInputGate,
} from "@sluice/network/testing";
// Inside the package only (no entry point exports it): the built module itself.
import { TaskSlotPartitionProvider } from "../../../dist/threads/task-slot-partition-provider.js";

const { handle, signals, threadIndex } = workerData;
const memory = SharedNetworkMemory.attach(handle, threadIndex);
const global = new NetworkBufferPool(memory);
const doorbell = new ThreadDoorbell(signals, threadIndex);
const manager = new ResultPartitionManager();
const answers = new Map();
const lostListeners = [];
let serve;
let nextRequest = 0;

const post = (message) => parentPort.postMessage(message);
const errorOf = (error) => ({ code: error.code, name: error.name, message: error.message });

const provider = new TaskSlotPartitionProvider(
  manager,
  {
    role: "slot",
    threadIndex,
    sharedMemory: handle,
    signals,
    requestSubpartition(request) {
      const id = nextRequest++;
      post({ kind: "request", id, request });
      return new Promise((resolve, reject) => answers.set(id, { resolve, reject }));
    },
    serveSubpartitionRequests(handler) {
      serve = handler;
    },
    onThreadLost(listener) {
      lostListeners.push(listener);
    },
  },
  memory,
  doorbell,
);

/** Produces `records` framed records of `payload` bytes (its index first) over its subpartitions. */
async function produce(command) {
  const partition = buildPipelinedResultPartition({
    networkBufferPool: global,
    partitionManager: manager,
    partitionId: ResultPartitionID.parse(command.partitionId),
    numberOfSubpartitions: command.subpartitions,
    maxBuffers: command.maxBuffers,
    poolOptions: { maxBuffersPerChannel: command.maxBuffersPerChannel },
  });
  const frame = Buffer.alloc(4 + command.payload);
  frame.writeInt32BE(command.payload, 0);
  let backPressured = 0;
  try {
    for (let i = 0; i < command.records; i++) {
      if (!partition.isAvailable()) {
        backPressured++;
        post({
          kind: "progress",
          name: command.name,
          emitted: i,
          backPressured,
          pool: poolState(),
        });
        await partition.getAvailableFuture();
      }
      frame.writeInt32BE(i, 4);
      partition.emitRecord(frame, i % command.subpartitions);
      if (i % 128 === 127) await turn();
    }
    partition.finish();
  } catch (error) {
    partition.close();
    return { failed: errorOf(error), backPressured };
  }
  // Released once every consumer read its subpartition to the end (Flink's n + 1 users).
  partition.close();
  await partition.getReleaseFuture();
  return { emitted: command.records, backPressured };
}

function poolState() {
  return {
    free: global.getNumberOfAvailableMemorySegments(),
    total: global.totalNumberOfMemorySegments,
  };
}

/** Reads one subpartition of another thread's partition; checks order and counts. */
async function consume(command) {
  const gate = buildSingleInputGate({ networkBufferPool: global, maxBuffers: 2 });
  gate.setInputChannel(
    buildLocalInputChannel({
      gate,
      partitionId: ResultPartitionID.parse(command.partitionId),
      subpartitionIndex: command.subpartitionIndex,
      partitionManager: provider,
      backoff: { initialMs: 10, maxMs: 1000 },
    }),
  );
  gate.setup();
  gate.requestPartitions();
  let received = 0;
  let expected = command.subpartitionIndex;
  let outOfOrder = 0;
  let pending = Buffer.alloc(0);
  const held = [];
  try {
    for (;;) {
      if (command.stallAfter !== undefined && received >= command.stallAfter) {
        post({ kind: "stalled", name: command.name, received, held: held.length });
        await new Promise((resolve) => {
          stalled.set(command.name, resolve);
        });
        command.stallAfter = undefined;
      }
      const next = gate.pollNext();
      if (next === undefined) {
        if (gate.isFinished()) break;
        await gate.getAvailableFuture();
        continue;
      }
      if (next.buffer === undefined) continue;
      pending = Buffer.concat([pending, next.buffer.readableView()]);
      if (command.holdBuffers) held.push(next.buffer);
      else next.buffer.recycleBuffer();
      while (pending.length >= 8) {
        const length = pending.readInt32BE(0);
        if (pending.length < 4 + length) break;
        if (pending.readInt32BE(4) !== expected) outOfOrder++;
        expected += command.subpartitions;
        received++;
        pending = pending.subarray(4 + length);
      }
      if (command.holdBuffers && held.length >= command.holdBuffers) {
        post({ kind: "holding", name: command.name, held: held.length });
      }
      if (received % 64 === 0) await turn();
    }
    return { received, outOfOrder, leftover: pending.length };
  } catch (error) {
    return { failed: errorOf(error), received };
  } finally {
    for (const buffer of held.splice(0)) buffer.recycleBuffer();
    await gate.close();
  }
}

const stalled = new Map();

parentPort.on("message", (message) => {
  switch (message.kind) {
    case "answer": {
      const waiter = answers.get(message.id);
      answers.delete(message.id);
      if (message.ok) waiter.resolve(message.value);
      else {
        const { code, name, message: text } = message.error;
        waiter.reject(reconstructError(code, name, text));
      }
      return;
    }
    case "serve":
      serve(message.request).then(
        (value) => post({ kind: "served", id: message.id, ok: true, value }),
        (error) => post({ kind: "served", id: message.id, ok: false, error: errorOf(error) }),
      );
      return;
    case "lost":
      for (const listener of lostListeners) listener(message.thread, new Error(message.message));
      return;
    case "resume":
      stalled.get(message.name)?.();
      stalled.delete(message.name);
      return;
    case "produce":
    case "consume":
      (message.kind === "produce" ? produce(message) : consume(message)).then((result) =>
        post({ kind: "done", name: message.name, result }),
      );
      return;
    case "pool":
      post({ kind: "pool", ...poolState(), channels: provider.getNumberOfCrossThreadChannels() });
      return;
    case "close":
      provider.close();
      global.destroy();
      doorbell.close();
      post({ kind: "closed" });
      return;
  }
});
post({ kind: "ready" });
