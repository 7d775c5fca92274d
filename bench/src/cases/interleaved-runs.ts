/**
 * Interleaved runs of a case's systems: every system is opened and warmed up, then run 1 of
 * each, run 2 of each, ... so that a slow phase of the machine hits every system alike. A
 * system that fails to open or in a run is closed, leaves the rotation, and its failure is kept
 * for its row's note.
 */
import type { BenchOptions } from "../harness.js";
import { firstLine, log } from "./case-definition.js";

/** A system's open session: whatever it runs, it closes. */
export interface InterleavedSession {
  close(): Promise<void>;
}

/** What `interleavedRuns` runs, and what it makes of the sessions before they close. */
export interface InterleavedRunsSpec<S extends InterleavedSession, R> {
  readonly options: BenchOptions;
  readonly caseId: number;
  /** The systems, in the order they are opened and run. */
  readonly systems: readonly string[];
  /** Why a system cannot run at all (it is neither opened nor logged), or undefined. */
  readonly notRunBecause?: (system: string) => string | undefined;
  /** Appended to the warm-up's progress line (what one run moves, say). */
  readonly warmUpDetail?: string;
  open(system: string): Promise<S>;
  /** One run of `session`: the warm-up (`measured` false) or a measured run. */
  run(session: S, measured: boolean): Promise<unknown>;
  /**
   * Called with the sessions still open after the last run and the failures by system, before
   * every session closes.
   */
  collect(sessions: ReadonlyMap<string, S>, failures: ReadonlyMap<string, string>): Promise<R> | R;
}

/** Opens, warms up and runs the systems of `spec` interleaved; closes every session. */
export async function interleavedRuns<S extends InterleavedSession, R>(
  spec: InterleavedRunsSpec<S, R>,
): Promise<R> {
  const o = spec.options;
  const sessions = new Map<string, S>();
  const failures = new Map<string, string>();
  try {
    for (const system of spec.systems) {
      const reason = spec.notRunBecause?.(system);
      if (reason !== undefined) {
        failures.set(system, reason);
        continue;
      }
      log(`case ${spec.caseId} ${system}: start + warm-up${spec.warmUpDetail ?? ""}`);
      try {
        const session = await spec.open(system);
        sessions.set(system, session);
        await spec.run(session, false);
      } catch (error) {
        failures.set(system, `failed: ${firstLine(error)}`);
        await sessions.get(system)?.close();
        sessions.delete(system);
      }
    }
    for (let run = 1; run <= o.runs; run++) {
      log(`case ${spec.caseId} run ${run}/${o.runs} of ${sessions.size} systems`);
      for (const [system, session] of [...sessions]) {
        try {
          await spec.run(session, true);
        } catch (error) {
          failures.set(system, `failed in run ${run}: ${firstLine(error)}`);
          await session.close();
          sessions.delete(system);
        }
      }
    }
    return await spec.collect(sessions, failures);
  } finally {
    for (const session of sessions.values()) await session.close();
  }
}
