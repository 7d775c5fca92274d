import { afterEach, expect } from "vitest";
import type {
  CheckpointBarrierHandler,
  CheckpointBarrierHandlerOptions,
} from "../checkpoint-barrier-handler.js";
import { CheckpointedInputGate } from "../checkpointed-input-gate.js";
import { SingleCheckpointBarrierHandler } from "../single-checkpoint-barrier-handler.js";
import { ScriptedInputGate, type ScriptedItem } from "./scripted-input-gate.js";
import { ValidatingCheckpointableTask } from "./validating-checkpointable-task.js";

/** A barrier handler under test over one scripted gate, read through a CheckpointedInputGate. */
export interface HandlerFixture<H extends CheckpointBarrierHandler> {
  readonly gate: ScriptedInputGate;
  readonly task: ValidatingCheckpointableTask;
  readonly handler: H;
  readonly input: CheckpointedInputGate;
  readonly sequence: readonly ScriptedItem[];
}

/**
 * The set-up the handler tests share: `setUp(channels, sequence, create)` scripts a gate, builds
 * the handler over it (`create`, with the gate and a task that validates the checkpoint calls)
 * and reads it through a CheckpointedInputGate. After each test, the fixture set up last must
 * have nothing left to poll, and its gate is closed. `setUpSingle` does it for a
 * SingleCheckpointBarrierHandler (task name `test`) with the given clock and options.
 */
export function useHandlerFixture() {
  let current: HandlerFixture<CheckpointBarrierHandler> | undefined;
  afterEach(async () => {
    const fixture = current;
    current = undefined;
    if (fixture === undefined) return;
    expect(fixture.input.pollNext()).toBeUndefined();
    await fixture.gate.close();
  });
  function setUp<H extends CheckpointBarrierHandler>(
    channels: number,
    sequence: readonly ScriptedItem[],
    create: (gate: ScriptedInputGate, task: ValidatingCheckpointableTask) => H,
  ): HandlerFixture<H> {
    const gate = new ScriptedInputGate(channels, sequence);
    const task = new ValidatingCheckpointableTask();
    const handler = create(gate, task);
    const fixture = {
      gate,
      task,
      handler,
      input: new CheckpointedInputGate([gate], handler),
      sequence,
    };
    current = fixture;
    return fixture;
  }
  function setUpSingle(
    channels: number,
    sequence: readonly ScriptedItem[],
    options: Pick<CheckpointBarrierHandlerOptions, "clock" | "checkpointsAfterTasksFinish"> = {},
  ): HandlerFixture<SingleCheckpointBarrierHandler> {
    return setUp(
      channels,
      sequence,
      (gate, task) =>
        new SingleCheckpointBarrierHandler({ taskName: "test", inputs: [gate], task, ...options }),
    );
  }
  return { setUp, setUpSingle };
}
