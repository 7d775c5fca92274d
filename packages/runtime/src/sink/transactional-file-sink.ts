import { type FileHandle, link, mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { IllegalArgumentError, IllegalStateError } from "@sluice/core";
import type { JsonValue } from "@sluice/runtime-api";
import { asError } from "../util/as-error.js";
import { SinkTransactionError } from "./sink-transaction-error.js";
import { type SinkTask, TwoPhaseCommitSink } from "./two-phase-commit-sink.js";

/** Bytes a transaction holds in memory before it appends them to its in-progress file. */
const FLUSH_BYTES = 64 * 1024;

/** One part file being written: what goes into a checkpoint is its name and its length. */
interface FileTransaction {
  /** The committed file's name, `<prefix>-<job id>-<leadership epoch>-<attempt>-<sequence>`. */
  readonly name: string;
  /** Bytes written to it. */
  bytes: number;
  /** Bytes not appended to the in-progress file yet. */
  buffered: Buffer[];
  bufferedBytes: number;
  /** The in-progress file, once created. */
  handle: FileHandle | undefined;
  /** The appends, one after the other; a failure surfaces at the pre-commit. */
  writes: Promise<void>;
}

/** What a {@link TransactionalFileSink} writes where. */
export interface TransactionalFileSinkOptions {
  /** The folder the part files go to (created if missing). */
  readonly directory: string;
  /**
   * The names of this subtask's part files start with it, e.g. `part-<subtask>`: unique per
   * subtask of the job, since a restore deletes the in-progress and pending files of its job
   * with this prefix that the restored checkpoint does not name.
   */
  readonly partPrefix: string;
  /**
   * The execution attempt's number, `task.attemptNumber` (optional: the sink knows its task).
   *
   * @throws IllegalArgumentError (from the constructor) when it is not the task's.
   */
  readonly attemptNumber?: number;
  /** The task's name, for messages. */
  readonly taskName: string;
  /**
   * The task the sink writes for (see {@link SinkTask}). Default: the task whose code constructs
   * the sink before its first `await`, as the guide's examples do.
   */
  readonly task?: SinkTask;
}

/** What a {@link TransactionalFileSink} committed so far (this attempt). */
export interface TransactionalFileSinkStats {
  readonly committedTransactions: number;
  readonly abortedTransactions: number;
  /** Part files this attempt made visible (restored ones included). */
  readonly committedFiles: number;
  /** Their bytes. */
  readonly committedBytes: number;
}

/**
 * An exactly-once file sink on {@link TwoPhaseCommitSink} (the commit protocol of Flink's
 * FileSink): each transaction is one part file. Its bytes go to a hidden in-progress file
 * (`.<name>.inprogress`); the pre-commit at a checkpoint's snapshot syncs and closes it and
 * renames it to `.<name>.pending`; the commit, once the checkpoint completed, links it to
 * `<name>`, syncs the folder and removes the pending name. A part file is therefore never
 * visible before the checkpoint that covers its records completed, and visible exactly once
 * after it: a restore commits the pending files its checkpoint names (a file found committed
 * already is fine) and deletes the in-progress and pending files of this subtask and job it does
 * not name. A transaction without bytes leaves no file.
 *
 * Names are `<prefix>-<job id>-<leadership epoch>-<attempt>-<n>` (see
 * {@link TwoPhaseCommitSink.transactionScope}): an attempt of a job manager that took the job
 * over never takes a name the previous leader's attempts committed, and a second job writing to
 * the same folder never takes or deletes the first one's. A commit never replaces a file: it
 * links (which fails when the name exists) instead of renaming, and a name that exists already
 * and is not this transaction's file fails the commit with `SLUICE_ERR_SINK_TRANSACTION`.
 *
 * Tools reading the folder skip names starting with `.` (Flink's convention for in-progress
 * and pending files).
 */
export class TransactionalFileSink extends TwoPhaseCommitSink<FileTransaction> {
  private readonly options: TransactionalFileSinkOptions;
  private sequence = 0;
  private lingering = 0;
  private files = 0;
  private bytes = 0;

  /**
   * @throws IllegalArgumentError for a part prefix that is not a plain file name, or an
   *   `attemptNumber` that is not the task's; IllegalStateError when the sink does not know its
   *   task (constructed outside the task's code, or after its first `await`, without `task`).
   */
  constructor(options: TransactionalFileSinkOptions) {
    super(options.task);
    if (options.partPrefix === "" || /[/\\]|^\./.test(options.partPrefix)) {
      throw new IllegalArgumentError(
        `${options.taskName}: the part prefix must be a plain file name not starting with a dot, not "${options.partPrefix}"`,
      );
    }
    const task = this.task;
    if (task === undefined) {
      throw new IllegalStateError(
        `${options.taskName}: the TransactionalFileSink does not know which job, job-manager leadership and attempt it writes for, which its part files' names must hold: construct it in the task's code before the code's first await, or pass the task as the "task" option`,
      );
    }
    if (options.attemptNumber !== undefined && options.attemptNumber !== task.attemptNumber) {
      throw new IllegalArgumentError(
        `${options.taskName}: attemptNumber ${options.attemptNumber} is not the task's (${task.attemptNumber}); pass task.attemptNumber or leave it out`,
      );
    }
    this.options = options;
  }

  /** Creates the folder, then restores (see {@link TwoPhaseCommitSink.initializeState}). */
  override async initializeState(restored: JsonValue | undefined): Promise<void> {
    try {
      await mkdir(this.options.directory, { recursive: true });
    } catch (error) {
      throw this.failure("create the output folder", this.options.directory, error);
    }
    await super.initializeState(restored);
  }

  /** Appends `text` (UTF-8) to the open transaction. */
  write(text: string): void {
    const transaction = this.currentTransaction;
    const bytes = Buffer.from(text, "utf8");
    transaction.buffered.push(bytes);
    transaction.bufferedBytes += bytes.length;
    transaction.bytes += bytes.length;
    if (transaction.bufferedBytes >= FLUSH_BYTES) this.flush(transaction);
  }

  /** What this attempt committed and aborted. */
  get fileStats(): TransactionalFileSinkStats {
    return { ...this.stats, committedFiles: this.files, committedBytes: this.bytes };
  }

  /** The hidden name of a transaction's file while it is written. */
  inProgressPath(name: string): string {
    return path.join(this.options.directory, `.${name}.inprogress`);
  }

  /** The hidden name of a transaction's file once pre-committed. */
  pendingPath(name: string): string {
    return path.join(this.options.directory, `.${name}.pending`);
  }

  protected beginTransaction(): FileTransaction {
    return this.transaction(
      `${this.options.partPrefix}-${this.transactionScope}-${this.sequence++}`,
      0,
    );
  }

  protected async preCommit(transaction: FileTransaction, checkpointId: bigint): Promise<void> {
    if (transaction.bytes === 0) return;
    this.flush(transaction);
    await transaction.writes;
    const handle = transaction.handle as FileHandle;
    const inProgress = this.inProgressPath(transaction.name);
    try {
      await handle.sync();
      await handle.close();
      transaction.handle = undefined;
      await rename(inProgress, this.pendingPath(transaction.name));
    } catch (error) {
      throw this.failure(`pre-commit it for checkpoint ${checkpointId}`, inProgress, error);
    }
  }

  protected async commit(transaction: FileTransaction): Promise<void> {
    if (transaction.bytes === 0) return;
    const pending = this.pendingPath(transaction.name);
    const committed = path.join(this.options.directory, transaction.name);
    let linked = false;
    try {
      // A link never replaces an existing name, as a rename would: a part file committed
      // before is never overwritten, whoever wrote it.
      await link(pending, committed);
      linked = true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EEXIST") {
        await this.checkCommittedBefore(transaction, pending, committed);
      } else if (code === "ENOENT") {
        // Committed already (by the attempt before a restore)? Then it is complete.
        const found = await stat(committed).catch(() => undefined);
        if (found?.size !== transaction.bytes) {
          throw new SinkTransactionError(
            `${this.options.taskName}: cannot commit part file ${transaction.name}: neither ${pending} nor a committed ${committed} of ${transaction.bytes} bytes exists (deleted or moved by hand, or another output folder)`,
          );
        }
      } else {
        throw this.failure("commit it", pending, error);
      }
    }
    await this.syncDirectory();
    // Once the committed name is durable; a crash before leaves both names, which the restore's
    // commit finds to be the same file.
    try {
      await rm(pending, { force: true });
    } catch (error) {
      throw this.failure("remove the pending name of the committed file", pending, error);
    }
    if (linked) await this.syncDirectory();
    this.files++;
    this.bytes += transaction.bytes;
  }

  /**
   * The commit found `committed` taken: fine when it is this transaction's file (linked by an
   * earlier commit that did not remove the pending name, or by another attempt committing the
   * same restored transaction), else the name belongs to another file, which is never replaced.
   *
   * @throws SinkTransactionError when `committed` is another file.
   */
  private async checkCommittedBefore(
    transaction: FileTransaction,
    pending: string,
    committed: string,
  ): Promise<void> {
    const [ours, theirs] = await Promise.all([
      stat(pending).catch(() => undefined),
      stat(committed).catch(() => undefined),
    ]);
    const same =
      theirs !== undefined &&
      (ours === undefined
        ? theirs.size === transaction.bytes
        : ours.dev === theirs.dev && ours.ino === theirs.ino);
    if (!same) {
      throw new SinkTransactionError(
        `${this.options.taskName}: cannot commit part file ${transaction.name}: ${committed} exists already and is another file (${theirs?.size ?? "?"} bytes, not this transaction's ${transaction.bytes}); a commit never replaces a file`,
      );
    }
  }

  protected async abort(transaction: FileTransaction): Promise<void> {
    await transaction.writes.catch(() => {});
    await transaction.handle?.close().catch(() => {});
    transaction.handle = undefined;
    transaction.buffered = [];
    const inProgress = this.inProgressPath(transaction.name);
    try {
      await rm(inProgress, { force: true });
      await rm(this.pendingPath(transaction.name), { force: true });
    } catch (error) {
      throw this.failure("abort it", inProgress, error);
    }
  }

  protected override isEmpty(transaction: FileTransaction): boolean {
    return transaction.bytes === 0;
  }

  protected serializeTransaction(transaction: FileTransaction): JsonValue {
    return { name: transaction.name, bytes: transaction.bytes };
  }

  protected deserializeTransaction(json: JsonValue): FileTransaction {
    const { name, bytes } = json as { name?: unknown; bytes?: unknown };
    if (typeof name !== "string" || typeof bytes !== "number") {
      throw new SinkTransactionError(
        `${this.options.taskName}: the restored state holds no part file transaction: ${JSON.stringify(json)}`,
      );
    }
    return this.transaction(name, bytes);
  }

  /**
   * Deletes the in-progress and pending files of this subtask and job (`.<prefix>-<job id>-...`)
   * that the restored checkpoint did not name; another job's files in the folder stay.
   */
  protected override async abortLingeringTransactions(
    known: readonly FileTransaction[],
  ): Promise<number> {
    const prefix = `.${this.options.partPrefix}-${String(this.task?.jobId)}-`;
    let deleted = 0;
    const names = new Set(known.map((transaction) => transaction.name));
    const entries = await readdir(this.options.directory);
    for (const entry of entries) {
      if (!entry.startsWith(prefix)) continue;
      const match = /^\.(.+)\.(inprogress|pending)$/.exec(entry);
      if (match === null || names.has(match[1] as string)) continue;
      await rm(path.join(this.options.directory, entry), { force: true });
      deleted++;
    }
    this.lingering += deleted;
    return deleted;
  }

  /** Lingering part files a restore deleted (begun after the restored checkpoint). */
  get lingeringFilesDeleted(): number {
    return this.lingering;
  }

  private transaction(name: string, bytes: number): FileTransaction {
    return {
      name,
      bytes,
      buffered: [],
      bufferedBytes: 0,
      handle: undefined,
      writes: Promise.resolve(),
    };
  }

  /** Appends what `transaction` buffered to its in-progress file, after earlier appends. */
  private flush(transaction: FileTransaction): void {
    if (transaction.bufferedBytes === 0) return;
    const chunk = Buffer.concat(transaction.buffered);
    transaction.buffered = [];
    transaction.bufferedBytes = 0;
    const file = this.inProgressPath(transaction.name);
    transaction.writes = transaction.writes.then(async () => {
      try {
        transaction.handle ??= await open(file, "wx");
        await transaction.handle.write(chunk);
      } catch (error) {
        throw this.failure("write it", file, error);
      }
    });
    // Surfaces at the pre-commit (or is dropped by an abort).
    transaction.writes.catch(() => {});
  }

  /** Makes the renames durable: a crash after the commit cannot undo it. */
  private async syncDirectory(): Promise<void> {
    let handle: FileHandle | undefined;
    try {
      handle = await open(this.options.directory, "r");
      await handle.sync();
    } catch (error) {
      throw this.failure("sync the output folder", this.options.directory, error);
    } finally {
      await handle?.close();
    }
  }

  private failure(what: string, file: string, error: unknown): Error {
    if (error instanceof SinkTransactionError) return error;
    return new SinkTransactionError(
      `${this.options.taskName}: cannot ${what} (${file}): ${asError(error).message}`,
      { cause: error },
    );
  }
}
