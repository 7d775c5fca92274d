import { describe, expect, it } from "vitest";
import { assignToKeyGroup, computeOperatorIndexForKeyGroup } from "./key-group-range-assignment.js";
import { KeyGroupStreamPartitioner } from "./key-group-stream-partitioner.js";
import { expectIllegalArgument, expectIllegalState } from "./test-support/expect-error.js";

interface Event {
  readonly user: string | number;
  readonly value: number;
}

function byUser(
  maxParallelism: number,
  channels: number,
): KeyGroupStreamPartitioner<Event, unknown> {
  const partitioner = new KeyGroupStreamPartitioner<Event, unknown>((e) => e.user, maxParallelism);
  partitioner.setup(channels);
  return partitioner;
}

describe("KeyGroupStreamPartitioner", () => {
  it("sends every record of a key to the same channel", () => {
    const partitioner = byUser(128, 4);
    for (const user of ["alice", "bob", "carol", 7, -12]) {
      const first = partitioner.selectChannel({ user, value: 0 });
      for (let value = 1; value < 20; value++) {
        expect(partitioner.selectChannel({ user, value })).toBe(first);
      }
    }
  });

  it("picks the channel of the operator that owns the key's key group", () => {
    for (const [maxP, channels] of [
      [128, 1],
      [128, 3],
      [256, 7],
      [128, 128],
    ] as const) {
      const partitioner = byUser(maxP, channels);
      for (let i = 0; i < 500; i++) {
        const user = `user-${i}`;
        const expected = computeOperatorIndexForKeyGroup(
          maxP,
          channels,
          assignToKeyGroup(user, maxP),
        );
        expect(partitioner.selectChannel({ user, value: i })).toBe(expected);
      }
    }
  });

  it("routes known keys to the channels Flink routes them to", () => {
    // Key groups of 128 from Java: hello 35, "" 94, flink 98, 42 29, -7 33 → channels of 4.
    const partitioner = byUser(128, 4);
    const channelOf = (user: string | number) => partitioner.selectChannel({ user, value: 0 });
    expect([
      channelOf("hello"),
      channelOf(""),
      channelOf("flink"),
      channelOf(42),
      channelOf(-7),
    ]).toEqual([1, 2, 3, 0, 1]);
  });

  it("uses every channel when there are many keys", () => {
    const partitioner = byUser(128, 4);
    const used = new Set<number>();
    for (let i = 0; i < 200; i++) used.add(partitioner.selectChannel({ user: `u${i}`, value: i }));
    expect([...used].sort()).toEqual([0, 1, 2, 3]);
  });

  it("exposes its max parallelism and is an all-to-all edge named HASH", () => {
    const partitioner = byUser(256, 2);
    expect(partitioner.maxParallelism).toBe(256);
    expect(partitioner.isPointwise()).toBe(false);
    expect(partitioner.isBroadcast()).toBe(false);
    expect(partitioner.toString()).toBe("HASH");
  });

  it.each([0, 32769, 1.5])("rejects max parallelism %d at construction, naming it", (maxP) => {
    expectIllegalArgument(
      () => new KeyGroupStreamPartitioner<Event, unknown>((e) => e.user, maxP),
      "maxParallelism",
      String(maxP),
    );
  });

  it("rejects more channels than key groups at setup", () => {
    const partitioner = new KeyGroupStreamPartitioner<Event, unknown>((e) => e.user, 128);
    expectIllegalArgument(() => partitioner.setup(129), "parallelism", "129");
  });

  it("rejects a key that has no hash code, naming its type", () => {
    const partitioner = new KeyGroupStreamPartitioner<Event, unknown>(() => new Map(), 128);
    partitioner.setup(2);
    expectIllegalArgument(() => partitioner.selectChannel({ user: "a", value: 1 }), "Map");
  });

  it("lets errors from the key selector propagate unchanged", () => {
    const boom = new Error("no key");
    const partitioner = new KeyGroupStreamPartitioner<Event, unknown>(() => {
      throw boom;
    }, 128);
    partitioner.setup(2);
    expect(() => partitioner.selectChannel({ user: "a", value: 1 })).toThrow(boom);
  });

  it("refuses to select before setup", () => {
    const partitioner = new KeyGroupStreamPartitioner<Event, unknown>((e) => e.user, 128);
    expectIllegalState(() => partitioner.selectChannel({ user: "a", value: 1 }), "HASH", "setup");
  });
});
