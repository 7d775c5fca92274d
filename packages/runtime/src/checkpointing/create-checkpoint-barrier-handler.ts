import { CheckpointingMode } from "../messages/checkpointing-mode.js";
import type {
  CheckpointBarrierHandler,
  CheckpointBarrierHandlerOptions,
} from "./checkpoint-barrier-handler.js";
import { CheckpointBarrierTracker } from "./checkpoint-barrier-tracker.js";
import { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";

/** Options of {@link createCheckpointBarrierHandler}. */
export interface CreateCheckpointBarrierHandlerOptions extends CheckpointBarrierHandlerOptions {
  /** The job's checkpointing mode. */
  readonly mode: CheckpointingMode;
}

/**
 * The barrier handler for a task in `mode` (Flink's InputProcessorUtil): exactly-once aligns over
 * all of `inputs`, at-least-once tracks without blocking. A task creates one handler over all
 * its gates and one {@link CheckpointedInputGate} per input on top of it:
 *
 * ```ts
 * const handler = createCheckpointBarrierHandler({ mode, taskName, inputs: [left, right], task });
 * const leftInput = new CheckpointedInputGate([left], handler);
 * const rightInput = new CheckpointedInputGate([right], handler);
 * ```
 */
export function createCheckpointBarrierHandler(
  options: CreateCheckpointBarrierHandlerOptions,
): CheckpointBarrierHandler {
  return options.mode === CheckpointingMode.EXACTLY_ONCE
    ? new SingleCheckpointBarrierHandler(options)
    : new CheckpointBarrierTracker(options);
}
