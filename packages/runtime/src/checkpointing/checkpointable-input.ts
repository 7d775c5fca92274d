import type { InputGate } from "@sluice/runtime-api";

/**
 * What a barrier handler needs of an input gate (Flink's CheckpointableInput): how many channels
 * it has, and a way to let a channel continue after its aligned barrier. Every `InputGate` is one.
 *
 * An aligned barrier blocks its subpartition at the producer as it is sent, so blocking needs no
 * call on the consumer side; `resumeConsumption` sends the producer Flink's ResumeConsumption.
 * `convertToPriorityEvent` (optional) moves an announced barrier ahead of its channel's data when
 * an alignment times out.
 */
export type CheckpointableInput = Pick<
  InputGate,
  "numberOfInputChannels" | "resumeConsumption" | "convertToPriorityEvent"
>;
