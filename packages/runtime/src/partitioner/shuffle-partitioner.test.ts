import { describe, expect, it } from "vitest";
import { ShufflePartitioner } from "./shuffle-partitioner.js";
import { expectIllegalState } from "./test-support/expect-error.js";
import { seededRandom } from "./test-support/seeded-random.js";

describe("ShufflePartitioner", () => {
  it("maps the random draw onto the channel range", () => {
    const draws = [0, 0.3, 0.999999];
    const partitioner = new ShufflePartitioner<string>(() => draws.shift() ?? 0);
    partitioner.setup(10);
    expect([0, 1, 2].map(() => partitioner.selectChannel("r"))).toEqual([0, 3, 9]);
  });

  it("spreads records roughly uniformly over the channels (seeded)", () => {
    const channels = 8;
    const records = 40_000;
    const partitioner = new ShufflePartitioner<number>(seededRandom(42));
    partitioner.setup(channels);
    const counts = new Array<number>(channels).fill(0);
    for (let i = 0; i < records; i++) {
      const channel = partitioner.selectChannel(i);
      counts[channel] = (counts[channel] ?? 0) + 1;
    }
    const expected = records / channels;
    for (const count of counts) {
      expect(Math.abs(count - expected)).toBeLessThan(expected * 0.05);
    }
  });

  it("draws independently per record rather than cycling", () => {
    const partitioner = new ShufflePartitioner<number>(seededRandom(7));
    partitioner.setup(4);
    const picks = Array.from({ length: 64 }, (_, i) => partitioner.selectChannel(i));
    const roundRobin = picks.every(
      (channel, i) => i === 0 || channel === ((picks[i - 1] ?? 0) + 1) % 4,
    );
    expect(roundRobin).toBe(false);
    expect(new Set(picks).size).toBe(4);
  });

  it("rejects a random source that returns a value outside [0, 1)", () => {
    const partitioner = new ShufflePartitioner<string>(() => -0.1);
    partitioner.setup(4);
    expectIllegalState(() => partitioner.selectChannel("r"), "[0, 1)", "-0.1");
  });

  it("refuses to select before setup", () => {
    expectIllegalState(() => new ShufflePartitioner<string>().selectChannel("r"), "setup");
  });

  it("is an all-to-all edge named SHUFFLE", () => {
    const partitioner = new ShufflePartitioner<string>();
    expect(partitioner.isPointwise()).toBe(false);
    expect(partitioner.isBroadcast()).toBe(false);
    expect(partitioner.toString()).toBe("SHUFFLE");
  });
});
