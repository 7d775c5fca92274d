/**
 * The two-phase-commit protocol on real files, ported from Flink's
 * TwoPhaseCommitSinkFunctionTest (testNotifyOfCompletedCheckpoint, testFailBeforeNotify) and
 * widened to the rules of a restore: commit what the restored checkpoint pre-committed (again,
 * harmlessly, when it was committed already), abort the transaction open then and any begun
 * after it. Flink's transaction-timeout cases (testIgnoreCommitExceptionDuringRecovery,
 * testLogTimeoutAlmostReachedWarning*) are left out: the file sink's transactions never time out.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import type { JsonValue } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SinkTransactionError } from "./sink-transaction-error.js";
import { TransactionalFileSink } from "./transactional-file-sink.js";

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), "sluice-file-sink-test-"));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function sink(attemptNumber = 0, restored?: JsonValue): Promise<TransactionalFileSink> {
  const created = new TransactionalFileSink({
    directory,
    partPrefix: "part-0",
    attemptNumber,
    taskName: "Sink (1/1)#0",
  });
  await created.initializeState(restored);
  return created;
}

/** The snapshot of `checkpointId` with its pre-commit done (what the task acknowledges after). */
async function checkpoint(target: TransactionalFileSink, checkpointId: bigint): Promise<JsonValue> {
  // Through JSON, as the task stores it.
  const state = JSON.parse(JSON.stringify(target.snapshotState(checkpointId))) as JsonValue;
  await target.persistSnapshot(checkpointId);
  return state;
}

/** The committed lines, file by file in name order; hidden (in-progress, pending) files apart. */
async function committed(): Promise<{ lines: string[]; hidden: string[] }> {
  const entries = (await readdir(directory)).sort();
  const lines: string[] = [];
  for (const entry of entries.filter((name) => !name.startsWith("."))) {
    const text = await readFile(path.join(directory, entry), "utf8");
    lines.push(...text.split("\n").filter((line) => line !== ""));
  }
  return { lines, hidden: entries.filter((name) => name.startsWith(".")) };
}

/** Polls `condition` until it holds, failing after 10 s. */
async function eventually(what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("TransactionalFileSink (TwoPhaseCommitSinkFunctionTest)", () => {
  it("testNotifyOfCompletedCheckpoint: a completion commits its checkpoint's transaction and older ones, nothing newer", async () => {
    const target = await sink();
    target.write("42\n");
    await checkpoint(target, 0n);
    target.write("43\n");
    await checkpoint(target, 1n);
    target.write("44\n");
    await checkpoint(target, 2n);
    // Pre-committed, not visible.
    expect(await committed()).toEqual({
      lines: [],
      hidden: [".part-0-0-0.pending", ".part-0-0-1.pending", ".part-0-0-2.pending"],
    });
    await target.notifyCheckpointComplete(1n);
    expect((await committed()).lines).toEqual(["42", "43"]);
    await target.notifyCheckpointComplete(2n);
    expect(await committed()).toEqual({ lines: ["42", "43", "44"], hidden: [] });
    expect(target.fileStats).toMatchObject({ committedFiles: 3, committedBytes: 9 });
    await target.close();
    expect((await committed()).hidden).toEqual([]);
  });

  it("never shows a record before its checkpoint completed: it is written under an in-progress name", async () => {
    const target = await sink();
    // More than the sink buffers, so bytes reach the in-progress file before the checkpoint.
    const line = `${"x".repeat(1023)}\n`;
    for (let i = 0; i < 100; i++) target.write(line);
    const snapshotted = target.snapshotState(1n);
    expect(snapshotted).toBeDefined();
    const before = await readdir(directory);
    expect(before.every((name) => name.startsWith("."))).toBe(true);
    await target.persistSnapshot(1n);
    expect(await committed()).toEqual({ lines: [], hidden: [".part-0-0-0.pending"] });
    await target.notifyCheckpointComplete(1n);
    expect((await committed()).lines).toHaveLength(100);
  });

  it("testFailBeforeNotify: a restore commits the pending transactions of its checkpoint and deletes what came after", async () => {
    const first = await sink(0);
    first.write("42\n");
    const state = await checkpoint(first, 1n);
    first.write("43\n");
    await checkpoint(first, 2n);
    // More than the sink buffers: this open transaction's in-progress file exists.
    first.write(`44${"x".repeat(70 * 1024)}\n`);
    await eventually("the in-progress file exists", async () =>
      (await readdir(directory)).includes(".part-0-0-2.inprogress"),
    );
    // The attempt fails here: checkpoint 2 never completed. Its pending file (the transaction
    // open at checkpoint 1) is aborted; the in-progress one, begun after, is lingering.
    const restored = await sink(1, state);
    expect(await committed()).toEqual({ lines: ["42"], hidden: [] });
    expect(restored.stats).toEqual({ committedTransactions: 1, abortedTransactions: 2 });
    expect(restored.lingeringFilesDeleted).toBe(1);
    // The restored attempt writes the replayed records again, exactly once.
    restored.write("43\n");
    await checkpoint(restored, 3n);
    await restored.notifyCheckpointComplete(3n);
    expect((await committed()).lines).toEqual(["42", "43"]);
  });

  it("commits a restored transaction that the failed attempt committed already only once", async () => {
    const first = await sink(0);
    first.write("42\n");
    const state = await checkpoint(first, 1n);
    await first.notifyCheckpointComplete(1n);
    // The attempt fails after its commit; the restore commits checkpoint 1's transaction again.
    await sink(1, state);
    expect(await committed()).toEqual({ lines: ["42"], hidden: [] });
  });

  it("keeps an aborted checkpoint's transaction pending: the next completed checkpoint commits it", async () => {
    const target = await sink();
    target.write("42\n");
    await checkpoint(target, 1n);
    target.notifyCheckpointAborted(1n);
    target.write("43\n");
    const state = await checkpoint(target, 2n);
    // Checkpoint 2's state still names checkpoint 1's transaction.
    expect(JSON.stringify(state)).toContain("part-0-0-0");
    expect((await committed()).lines).toEqual([]);
    await target.notifyCheckpointComplete(2n);
    expect((await committed()).lines).toEqual(["42", "43"]);
  });

  it("close() of a failed task aborts the open transaction and leaves the pending ones for the restore", async () => {
    const target = await sink();
    target.write("42\n");
    const state = await checkpoint(target, 1n);
    target.write("43\n");
    await target.close();
    expect(target.stats.abortedTransactions).toBe(1);
    expect(await committed()).toEqual({ lines: [], hidden: [".part-0-0-0.pending"] });
    await sink(1, state);
    expect(await committed()).toEqual({ lines: ["42"], hidden: [] });
  });

  it("fails a restore with SLUICE_ERR_SINK_TRANSACTION when a pre-committed part file is gone", async () => {
    const first = await sink(0);
    first.write("42\n");
    const state = await checkpoint(first, 1n);
    await rm(path.join(directory, ".part-0-0-0.pending"));
    await expectRejection(
      sink(1, state),
      SinkTransactionError,
      ErrorCodes.SINK_TRANSACTION,
      "cannot commit part file part-0-0-0",
    );
  });

  it("declines the checkpoint (persistSnapshot rejects) when the part file cannot be written", async () => {
    const target = await sink();
    target.write("42\n");
    await rm(directory, { recursive: true, force: true });
    target.snapshotState(1n);
    await expectRejection(
      target.persistSnapshot(1n),
      SinkTransactionError,
      ErrorCodes.SINK_TRANSACTION,
      "part-0-0-0",
    );
  });
});
