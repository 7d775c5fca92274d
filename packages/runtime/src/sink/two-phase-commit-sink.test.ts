/**
 * The notifications a TwoPhaseCommitSink gets, in the order a task hands them on (Flink's
 * TwoPhaseCommitSinkFunctionTest, testSubsumedNotificationOfPreviousCheckpoint), on a sink that
 * keeps its transactions in memory: the protocol is the base class's, the storage is not what
 * is tested here (TransactionalFileSink's tests run it on files).
 */
import type { JsonValue } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { TwoPhaseCommitSink } from "./two-phase-commit-sink.js";

/** A transaction: an id and the values written to it. */
interface Transaction {
  readonly id: number;
  readonly values: string[];
}

/** Keeps committed values in a list; a transaction committed twice counts once. */
class InMemorySink extends TwoPhaseCommitSink<Transaction> {
  readonly committedValues: string[] = [];
  private readonly committedIds = new Set<number>();
  private nextId = 0;

  write(value: string): void {
    this.currentTransaction.values.push(value);
  }

  protected beginTransaction(): Transaction {
    return { id: this.nextId++, values: [] };
  }

  protected async preCommit(): Promise<void> {}

  protected async commit(transaction: Transaction): Promise<void> {
    if (this.committedIds.has(transaction.id)) return;
    this.committedIds.add(transaction.id);
    this.committedValues.push(...transaction.values);
  }

  protected async abort(): Promise<void> {}

  protected serializeTransaction(transaction: Transaction): JsonValue {
    return { id: transaction.id, values: [...transaction.values] };
  }

  protected deserializeTransaction(json: JsonValue): Transaction {
    return json as unknown as Transaction;
  }
}

async function openSink(): Promise<InMemorySink> {
  const sink = new InMemorySink();
  await sink.initializeState(undefined);
  return sink;
}

/** Writes `value` and takes checkpoint `checkpointId`'s snapshot, pre-commit included. */
async function writeAndSnapshot(sink: InMemorySink, value: string, checkpointId: bigint) {
  sink.write(value);
  sink.snapshotState(checkpointId);
  await sink.persistSnapshot(checkpointId);
}

describe("TwoPhaseCommitSink notifications (TwoPhaseCommitSinkFunctionTest)", () => {
  it("testSubsumedNotificationOfPreviousCheckpoint: a late completion of an older checkpoint commits nothing twice", async () => {
    const sink = await openSink();
    await writeAndSnapshot(sink, "42", 0n);
    await writeAndSnapshot(sink, "43", 1n);
    await writeAndSnapshot(sink, "44", 2n);
    await sink.notifyCheckpointComplete(2n);
    await sink.notifyCheckpointComplete(1n);
    expect(sink.committedValues).toEqual(["42", "43", "44"]);
    expect(sink.hasPendingTransactions).toBe(false);
    expect(sink.stats.committedTransactions).toBe(3);
  });

  it("commits what a subsumed checkpoint left pending, and nothing newer", async () => {
    const sink = await openSink();
    await writeAndSnapshot(sink, "a", 1n);
    await writeAndSnapshot(sink, "b", 2n);
    await writeAndSnapshot(sink, "c", 3n);
    // Checkpoint 2's completion never arrived; its subsumption does.
    await sink.notifyCheckpointSubsumed(2n);
    expect(sink.committedValues).toEqual(["a", "b"]);
    expect(sink.hasPendingTransactions).toBe(true);
    await sink.notifyCheckpointComplete(3n);
    // The subsumption of a checkpoint whose completion was notified finds nothing left.
    await sink.notifyCheckpointSubsumed(3n);
    expect(sink.committedValues).toEqual(["a", "b", "c"]);
    expect(sink.stats.committedTransactions).toBe(3);
  });

  it("keeps an aborted checkpoint's transaction pending until a newer checkpoint completes", async () => {
    const sink = await openSink();
    await writeAndSnapshot(sink, "a", 1n);
    sink.notifyCheckpointAborted(1n);
    expect(sink.committedValues).toEqual([]);
    await writeAndSnapshot(sink, "b", 2n);
    await sink.notifyCheckpointComplete(2n);
    expect(sink.committedValues).toEqual(["a", "b"]);
  });
});
