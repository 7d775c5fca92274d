import { IllegalArgumentError, IllegalStateError, type JobID } from "@sluice/core";
import type { JsonValue } from "@sluice/runtime-api";
import type { CheckpointHandler } from "../checkpointing/checkpoint-handler.js";
import type { CheckpointListener } from "../checkpointing/checkpoint-listener.js";
import { isLeadershipEpoch } from "../messages/leadership-epoch.js";
import {
  isOperatorListStateSnapshot,
  operatorListState,
  operatorListStateElements,
} from "../state/operator-list-state.js";
import { startingTask } from "../taskexecutor/starting-task.js";

/**
 * The task a {@link TwoPhaseCommitSink} writes for, as far as the names of its transactions
 * need it. A `Task` is one.
 */
export interface SinkTask {
  /** The job (its names start with it, so a restore never touches another job's). */
  readonly jobId: JobID | string;
  /** The job manager's leadership that deployed the attempt (`Task.leadershipEpoch`). */
  readonly leadershipEpoch: string;
  /** The execution attempt's number. */
  readonly attemptNumber: number;
  /** The task's name, for messages. */
  readonly name: string;
}

/** What a job id may hold in a transaction's name. */
const JOB_ID = /^[A-Za-z0-9]{1,64}$/;

/** A transaction the sink pre-committed for a checkpoint and has not committed yet. */
interface PendingTransaction<Txn> {
  readonly checkpointId: bigint;
  readonly transaction: Txn;
  /** Settles once {@link TwoPhaseCommitSink.preCommit} of it ended. */
  readonly preCommitted: Promise<void>;
}

/** The sink's part of a checkpoint: what a restore commits and what it aborts. */
interface TwoPhaseCommitState {
  /** Pre-committed transactions not known to be committed yet, oldest first. */
  readonly pending: readonly { readonly checkpointId: string; readonly transaction: JsonValue }[];
  /** The transaction that was open at the checkpoint: a restore aborts it. */
  readonly current: JsonValue;
}

/** What a {@link TwoPhaseCommitSink} has done so far (this attempt). */
export interface TwoPhaseCommitSinkStats {
  /** Transactions committed (restored ones included). */
  readonly committedTransactions: number;
  /** Transactions aborted (restored ones included, and the open one of a failed task). */
  readonly abortedTransactions: number;
}

/**
 * The base of an exactly-once sink (Flink's TwoPhaseCommitSinkFunction): what the task writes
 * goes into the current transaction; at a checkpoint's snapshot the transaction is
 * pre-committed (made durable, not visible) and a new one begins; only when the job side says
 * the checkpoint completed is it committed (made visible). The checkpoint's state holds the
 * pre-committed transactions, so a restart from it commits them again (commits must be
 * idempotent: the first attempt may have committed already) and aborts the transaction that was
 * open then, whose records the restored sources replay.
 *
 * Subclasses implement the five transaction steps and how a transaction is stored in a
 * checkpoint. A task uses a sink as its {@link CheckpointHandler} and {@link CheckpointListener}
 * (see {@link attach}), or calls {@link snapshotState} / {@link persistSnapshot} from its own
 * handler to store the sink's part next to its own state.
 *
 * Rules, as in Flink: a checkpoint that is aborted commits nothing, and its pre-committed
 * transaction stays pending: the next completed checkpoint holds it too and commits it (its
 * records are before that checkpoint's barrier, so no source replays them). A completion commits
 * every pending transaction of that checkpoint and older ones, oldest first: a newer completed
 * checkpoint subsumes the older ones, whether they were aborted, still pending, or completed
 * with their notification late or lost. A late completion of an older checkpoint, or a
 * checkpoint's subsumption, finds nothing left to commit.
 *
 * @typeParam Txn - the sink's transaction handle (a file, a broker transaction id).
 */
export abstract class TwoPhaseCommitSink<Txn> implements CheckpointHandler, CheckpointListener {
  /**
   * The task the sink writes for: the one passed to the constructor, else the task whose code
   * constructed the sink before its first `await` (see {@link transactionScope}); `undefined`
   * when neither is known.
   */
  protected readonly task: SinkTask | undefined;
  private current: Txn | undefined;
  private readonly pending: PendingTransaction<Txn>[] = [];
  /** The commits, one after the other, so a transaction is never committed twice at once. */
  private commits: Promise<void> = Promise.resolve();
  private committed = 0;
  private aborted = 0;
  private initialized = false;

  /**
   * @param task - the task the sink writes for. Default: the task whose code is constructing
   *   the sink, as long as it does so before the code's first `await` (the task's invokable is
   *   running synchronously then).
   * @throws IllegalArgumentError when `task` holds a job id or leadership epoch that cannot be
   *   part of a name (letters and digits only).
   */
  constructor(task?: SinkTask) {
    const known = task ?? startingTask();
    if (known !== undefined) {
      const jobId = String(known.jobId);
      if (!JOB_ID.test(jobId) || !isLeadershipEpoch(known.leadershipEpoch)) {
        throw new IllegalArgumentError(
          `${known.name}: a sink's task needs a job id and a leadership epoch of letters and digits only, got ${JSON.stringify(jobId)} and ${JSON.stringify(known.leadershipEpoch)}`,
        );
      }
    }
    this.task = known;
  }

  /**
   * What makes the names of this sink's transactions (part files, a broker's transactional ids)
   * unique: `<job id>-<leadership epoch>-<attempt number>`. Attempt numbers start at 0 again
   * under a new job-manager leader and the same job may run again under its id, so neither the
   * attempt nor the job alone would do: an attempt of a new leader would take the names of
   * transactions the previous leader committed. Append a sequence number per transaction; a
   * restore that aborts lingering transactions matches `<job id>-` only (another job writing to
   * the same place keeps its own).
   *
   * @throws IllegalStateError when the sink does not know its task (see the constructor).
   */
  protected get transactionScope(): string {
    const task = this.task;
    if (task === undefined) {
      throw new IllegalStateError(
        "the sink does not know which task it writes for: construct it in the task's code before its first await, or pass the task to its constructor",
      );
    }
    return `${String(task.jobId)}-${task.leadershipEpoch}-${task.attemptNumber}`;
  }

  /** Begins a new transaction (Flink's `beginTransaction`); called synchronously. */
  protected abstract beginTransaction(): Txn;

  /**
   * Makes `transaction` durable without making it visible (Flink's `preCommit`): flush, sync.
   * Its checkpoint is acknowledged only after this resolved, and declined when it rejects.
   */
  protected abstract preCommit(transaction: Txn, checkpointId: bigint): Promise<void>;

  /** Makes a pre-committed `transaction` visible (Flink's `commit`). Must be idempotent. */
  protected abstract commit(transaction: Txn): Promise<void>;

  /** Discards `transaction` and what was written to it (Flink's `abort`). */
  protected abstract abort(transaction: Txn): Promise<void>;

  /** `transaction` as JSON, as it goes into a checkpoint (called at the snapshot). */
  protected abstract serializeTransaction(transaction: Txn): JsonValue;

  /** A transaction of a restored checkpoint, from its JSON. */
  protected abstract deserializeTransaction(json: JsonValue): Txn;

  /**
   * A restored pre-committed transaction (Flink's `recoverAndCommit`): by default
   * {@link commit}, which may find it committed already.
   */
  protected recoverAndCommit(transaction: Txn): Promise<void> {
    return this.commit(transaction);
  }

  /** A restored transaction that was open at the checkpoint (Flink's `recoverAndAbort`). */
  protected recoverAndAbort(transaction: Txn): Promise<void> {
    return this.abort(transaction);
  }

  /**
   * After a restore committed and aborted what the checkpoint named: discards transactions the
   * checkpoint cannot name, begun after it by the failed attempt (Flink's lingering
   * transactions). `known` are the restored ones. Resolves with how many it aborted (counted
   * in {@link stats}). By default none.
   */
  protected abortLingeringTransactions(_known: readonly Txn[]): Promise<number> {
    return Promise.resolve(0);
  }

  /**
   * Whether `transaction` holds nothing: an empty open transaction aborted by {@link close} or
   * on restore is not counted in {@link stats}. By default false.
   */
  protected isEmpty(_transaction: Txn): boolean {
    return false;
  }

  /** What the sink committed and aborted so far. */
  get stats(): TwoPhaseCommitSinkStats {
    return { committedTransactions: this.committed, abortedTransactions: this.aborted };
  }

  /** The open transaction records go to. Usable once {@link initializeState} resolved. */
  protected get currentTransaction(): Txn {
    if (this.current === undefined) {
      throw new IllegalStateError(
        "the sink has no open transaction: call initializeState(task.restoredState) first",
      );
    }
    return this.current;
  }

  /**
   * Restores the sink (Flink's `initializeState`) from its part of the restored checkpoint
   * (`undefined` for a fresh start): commits the checkpoint's pre-committed transactions,
   * aborts the one open then and any lingering ones, and begins the first transaction. After a
   * restore at another parallelism the part may hold the state of several old subtasks (or of
   * none): each one's transactions are committed and aborted alike.
   *
   * @throws SinkTransactionError when a restored transaction cannot be committed or aborted.
   */
  async initializeState(restored: JsonValue | undefined): Promise<void> {
    if (this.initialized) throw new IllegalStateError("the sink is initialized already");
    this.initialized = true;
    const known: Txn[] = [];
    // One state per old subtask: a restore at another parallelism may bring several (Flink's
    // TwoPhaseCommitSinkFunction keeps its state in a list state for this), or none.
    for (const element of statesOf(restored)) {
      const state = element as unknown as TwoPhaseCommitState;
      for (const entry of state.pending) {
        const transaction = this.deserializeTransaction(entry.transaction);
        known.push(transaction);
        await this.recoverAndCommit(transaction);
        this.committed++;
      }
      const open = this.deserializeTransaction(state.current);
      known.push(open);
      await this.recoverAndAbort(open);
      // Its bytes came after the snapshot, so whether it held any is unknown here: it counts.
      this.aborted++;
    }
    this.aborted += await this.abortLingeringTransactions(known);
    this.current = this.beginTransaction();
  }

  /**
   * Registers the sink as `task`'s checkpoint handler and listener and restores it from
   * `task.restoredState`: for a task whose only state is the sink's.
   */
  async attach(task: {
    readonly restoredState: JsonValue | undefined;
    setCheckpointHandler(handler: CheckpointHandler): void;
    setCheckpointListener(listener: CheckpointListener): void;
  }): Promise<void> {
    await this.initializeState(task.restoredState);
    task.setCheckpointHandler(this);
    task.setCheckpointListener(this);
  }

  /**
   * The snapshot of checkpoint `checkpointId` (synchronous, between two records): the open
   * transaction becomes pending for this checkpoint and a new one begins; returns the sink's
   * state (the pending transactions and the new open one) as an operator list state of one
   * element, which a restore at another parallelism gives to one new subtask.
   */
  snapshotState(checkpointId: bigint): JsonValue {
    const transaction = this.currentTransaction;
    const preCommitted = Promise.resolve().then(() => this.preCommit(transaction, checkpointId));
    preCommitted.catch(() => {});
    this.pending.push({ checkpointId, transaction, preCommitted });
    this.current = this.beginTransaction();
    const state: TwoPhaseCommitState = {
      pending: this.pending.map((entry) => ({
        checkpointId: entry.checkpointId.toString(),
        transaction: this.serializeTransaction(entry.transaction),
      })),
      current: this.serializeTransaction(this.current),
    };
    // An operator list state of one element (SPLIT_DISTRIBUTE): a restore at another
    // parallelism gives each old subtask's transactions to exactly one new subtask.
    return operatorListState([state as unknown as JsonValue]) as unknown as JsonValue;
  }

  /** Resolves once the transaction of checkpoint `checkpointId` is pre-committed. */
  async persistSnapshot(checkpointId: bigint): Promise<void> {
    await this.pending.find((entry) => entry.checkpointId === checkpointId)?.preCommitted;
  }

  /**
   * Commits every pending transaction of checkpoint `checkpointId` and older ones, oldest first
   * (Flink's `notifyCheckpointComplete`).
   *
   * @throws SinkTransactionError when a commit failed (the task then fails and its restored
   *   attempt commits again).
   */
  notifyCheckpointComplete(checkpointId: bigint): Promise<void> {
    this.commits = this.commits.then(async () => {
      while (this.pending.length > 0) {
        const oldest = this.pending[0] as PendingTransaction<Txn>;
        if (oldest.checkpointId > checkpointId) break;
        await oldest.preCommitted;
        await this.commit(oldest.transaction);
        // Only now: a snapshot taken while the commit ran still names it, harmlessly.
        this.pending.shift();
        this.committed++;
      }
    });
    return this.commits;
  }

  /**
   * Checkpoint `checkpointId` was aborted: nothing is committed or aborted. Its pre-committed
   * transaction stays pending and is committed with the next completed checkpoint, which holds
   * it too (as Flink's TwoPhaseCommitSinkFunction does).
   */
  notifyCheckpointAborted(_checkpointId: bigint): void {}

  /**
   * Completed checkpoint `checkpointId` was subsumed by a newer completed one, whose completion
   * was notified first: its transaction and older ones were committed then. Commits any of them
   * still pending, as a completion of `checkpointId` would (commits are idempotent), so nothing
   * of a subsumed checkpoint is left uncommitted.
   */
  notifyCheckpointSubsumed(checkpointId: bigint): Promise<void> {
    return this.notifyCheckpointComplete(checkpointId);
  }

  /**
   * The task ends without a final commit (it failed or was canceled): aborts the open
   * transaction. Pending ones are left for the restored attempt to commit.
   */
  async close(): Promise<void> {
    const open = this.current;
    this.current = undefined;
    await this.commits.catch(() => {});
    if (open === undefined) return;
    await this.abort(open);
    if (!this.isEmpty(open)) this.aborted++;
  }

  /** True while some pre-committed transaction waits for its checkpoint to complete. */
  get hasPendingTransactions(): boolean {
    return this.pending.length > 0;
  }
}

/** The sink states a restored part holds: its list state's elements, or one bare state. */
function statesOf(restored: JsonValue | undefined): JsonValue[] {
  if (restored === undefined || restored === null) return [];
  // A bare state, as sinks of an earlier release stored it.
  if (!isOperatorListStateSnapshot(restored)) return [restored];
  return operatorListStateElements(restored, "the restored state of a two-phase-commit sink");
}
