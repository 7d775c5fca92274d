/** A case's goal row: a measured value against its target, met or not (or not measured). */
import type { GoalRow } from "../harness.js";

/** What one goal says. */
export interface GoalSpec {
  /** The goal as the table prints it. */
  readonly text: string;
  /** The measured value; undefined or not finite when it could not be measured. */
  readonly measured: number | undefined;
  readonly comparison: "≥" | "≤";
  readonly target: number;
  readonly unit: string;
  /** Printed with the goal (noise, a related measurement, why it was not run). */
  readonly note?: string | undefined;
}

/** The goal row of `spec` for case `caseId` of run `runId`: `met` is null when not measured. */
export function goal(runId: string, caseId: number, spec: GoalSpec): GoalRow {
  const { text, measured, comparison, target, unit, note } = spec;
  const value = measured !== undefined && Number.isFinite(measured) ? measured : null;
  const met = value === null ? null : comparison === "≥" ? value >= target : value <= target;
  return {
    type: "goal",
    runId,
    case: caseId,
    goal: text,
    measured: value,
    target,
    comparison,
    unit,
    met,
    ...(note !== undefined ? { note } : {}),
  };
}
