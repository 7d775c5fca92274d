/**
 * The two-phase-commit protocol on real files, ported from Flink's
 * TwoPhaseCommitSinkFunctionTest (testNotifyOfCompletedCheckpoint, testFailBeforeNotify) and
 * widened to the rules of a restore: commit what the restored checkpoint pre-committed (again,
 * harmlessly, when it was committed already), abort the transaction open then and any begun
 * after it. Flink's transaction-timeout cases (testIgnoreCommitExceptionDuringRecovery,
 * testLogTimeoutAlmostReachedWarning*) are left out: the file sink's transactions never time out.
 */
import { link, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, IllegalArgumentError, IllegalStateError } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import type { JsonValue } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SinkTransactionError } from "./sink-transaction-error.js";
import { TransactionalFileSink } from "./transactional-file-sink.js";
import type { SinkTask } from "./two-phase-commit-sink.js";

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), "sluice-file-sink-test-"));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** The job and the leadership epoch of the sinks below, unless a test says otherwise. */
const JOB = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
const EPOCH = "7";

/** The task a sink of attempt `attemptNumber` writes for. */
function taskOf(attemptNumber: number, epoch = EPOCH, jobId = JOB): SinkTask {
  return { jobId, leadershipEpoch: epoch, attemptNumber, name: `Sink (1/1)#${attemptNumber}` };
}

/** The name of part file `n` of attempt `attempt` (of job {@link JOB} unless given). */
function p(attempt: number, n: number, epoch = EPOCH, jobId = JOB): string {
  return `part-0-${jobId}-${epoch}-${attempt}-${n}`;
}

async function sink(
  attemptNumber = 0,
  restored?: JsonValue,
  task = taskOf(attemptNumber),
): Promise<TransactionalFileSink> {
  const created = new TransactionalFileSink({
    directory,
    partPrefix: "part-0",
    attemptNumber,
    taskName: task.name,
    task,
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
      hidden: [`.${p(0, 0)}.pending`, `.${p(0, 1)}.pending`, `.${p(0, 2)}.pending`],
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
    expect(await committed()).toEqual({ lines: [], hidden: [`.${p(0, 0)}.pending`] });
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
      (await readdir(directory)).includes(`.${p(0, 2)}.inprogress`),
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
    expect(JSON.stringify(state)).toContain(p(0, 0));
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
    expect(await committed()).toEqual({ lines: [], hidden: [`.${p(0, 0)}.pending`] });
    await sink(1, state);
    expect(await committed()).toEqual({ lines: ["42"], hidden: [] });
  });

  it("fails a restore with SLUICE_ERR_SINK_TRANSACTION when a pre-committed part file is gone", async () => {
    const first = await sink(0);
    first.write("42\n");
    const state = await checkpoint(first, 1n);
    await rm(path.join(directory, `.${p(0, 0)}.pending`));
    await expectRejection(
      sink(1, state),
      SinkTransactionError,
      ErrorCodes.SINK_TRANSACTION,
      `cannot commit part file ${p(0, 0)}`,
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
      p(0, 0),
    );
  });
});

describe("TransactionalFileSink across job managers and jobs", () => {
  it("names part files by job, leadership epoch and attempt: the first attempt under a new leader never takes a name the old leader committed", async () => {
    // Leader 7's first attempt commits two part files, then its job manager dies.
    const old = await sink(0);
    old.write("a\n");
    await checkpoint(old, 1n);
    await old.notifyCheckpointComplete(1n);
    old.write("b\n");
    const state = await checkpoint(old, 2n);
    await old.notifyCheckpointComplete(2n);
    // Leader 9 takes the job over: its attempts are numbered from 0 again.
    const taken = await sink(0, state, taskOf(0, "9"));
    taken.write("c\n");
    await checkpoint(taken, 3n);
    await taken.notifyCheckpointComplete(3n);
    const { lines, hidden } = await committed();
    expect(hidden).toEqual([]);
    expect(lines.sort()).toEqual(["a", "b", "c"]);
    expect((await readdir(directory)).sort()).toEqual([p(0, 0), p(0, 1), p(0, 0, "9")]);
  });

  it("never replaces a committed file: a commit whose name is another file's fails with SLUICE_ERR_SINK_TRANSACTION and leaves that file", async () => {
    const target = await sink();
    target.write("ours\n");
    await checkpoint(target, 1n);
    await writeFile(path.join(directory, p(0, 0)), "theirs\n");
    await expectRejection(
      target.notifyCheckpointComplete(1n),
      SinkTransactionError,
      ErrorCodes.SINK_TRANSACTION,
      "exists already and is another file",
    );
    expect(await readFile(path.join(directory, p(0, 0)), "utf8")).toBe("theirs\n");
    // The transaction stays pending: nothing of it was lost.
    expect((await committed()).hidden).toEqual([`.${p(0, 0)}.pending`]);
  });

  it("finishes a commit cut short between its link and the removal of the pending name: the restore finds both names to be one file", async () => {
    const first = await sink(0);
    first.write("42\n");
    const state = await checkpoint(first, 1n);
    // The first attempt linked the committed name, then died before removing the pending one.
    await link(path.join(directory, `.${p(0, 0)}.pending`), path.join(directory, p(0, 0)));
    const restored = await sink(1, state);
    expect(await committed()).toEqual({ lines: ["42"], hidden: [] });
    expect(restored.fileStats).toMatchObject({ committedFiles: 1, committedBytes: 3 });
    expect((await stat(path.join(directory, p(0, 0)))).nlink).toBe(1);
  });

  it("a restore deletes only its own job's lingering files: another job's in-progress and pending files in the same folder stay, and that job commits them", async () => {
    const otherJob = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    const other = await sink(0, undefined, taskOf(0, "3", otherJob));
    other.write("other\n");
    const otherState = await checkpoint(other, 1n);
    // More than the sink buffers: the other job's open transaction has its in-progress file.
    other.write(`${"y".repeat(70 * 1024)}\n`);
    const otherInProgress = `.${p(0, 1, "3", otherJob)}.inprogress`;
    await eventually("the other job's in-progress file exists", async () =>
      (await readdir(directory)).includes(otherInProgress),
    );
    // This job starts in the same folder, with the same part prefix, and restores once.
    const first = await sink(0);
    first.write("mine\n");
    const state = await checkpoint(first, 1n);
    first.write("lost\n");
    await checkpoint(first, 2n);
    first.write(`${"z".repeat(70 * 1024)}\n`);
    await eventually("this job's in-progress file exists", async () =>
      (await readdir(directory)).includes(`.${p(0, 2)}.inprogress`),
    );
    const restored = await sink(1, state);
    expect(restored.lingeringFilesDeleted).toBe(1);
    const left = await readdir(directory);
    expect(left).toContain(`.${p(0, 0, "3", otherJob)}.pending`);
    expect(left).toContain(otherInProgress);
    // The other job fails and restores: its pre-committed file is still there to commit.
    const otherRestored = await sink(1, otherState, taskOf(1, "3", otherJob));
    expect(otherRestored.fileStats.committedFiles).toBe(1);
    expect((await committed()).lines.sort()).toEqual(["mine", "other"]);
  });

  it("refuses to be constructed without knowing its task, or with an attempt number that is not its task's", () => {
    expect(
      () => new TransactionalFileSink({ directory, partPrefix: "part-0", taskName: "Sink" }),
    ).toThrow(
      expect.objectContaining({ name: IllegalStateError.name, code: ErrorCodes.ILLEGAL_STATE }),
    );
    expect(
      () =>
        new TransactionalFileSink({
          directory,
          partPrefix: "part-0",
          attemptNumber: 3,
          taskName: "Sink",
          task: taskOf(0),
        }),
    ).toThrow(
      expect.objectContaining({
        name: IllegalArgumentError.name,
        message: expect.stringContaining("attemptNumber 3"),
      }),
    );
  });
});
