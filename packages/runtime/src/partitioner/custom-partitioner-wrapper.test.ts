import { describe, expect, it, vi } from "vitest";
import { CustomPartitionerWrapper, type Partitioner } from "./custom-partitioner-wrapper.js";
import { expectIllegalArgument, expectIllegalState } from "./test-support/expect-error.js";

interface Order {
  readonly region: string;
  readonly amount: number;
}

function wrap(partition: Partitioner<string>["partition"], channels = 4) {
  const wrapper = new CustomPartitionerWrapper<Order, string>({ partition }, (o) => o.region);
  wrapper.setup(channels);
  return wrapper;
}

describe("CustomPartitionerWrapper", () => {
  it("passes the record's key and the number of channels to the user partitioner", () => {
    const partition = vi.fn((key: string, n: number) => key.length % n);
    const wrapper = wrap(partition, 3);
    expect(wrapper.selectChannel({ region: "emea", amount: 1 })).toBe(1);
    expect(partition).toHaveBeenCalledWith("emea", 3);
  });

  it("returns the user partitioner's channel for every in-range answer", () => {
    const regions = ["a", "b", "c", "d"];
    const wrapper = wrap((key) => regions.indexOf(key));
    expect(regions.map((region) => wrapper.selectChannel({ region, amount: 0 }))).toEqual([
      0, 1, 2, 3,
    ]);
  });

  it.each([
    [4, "4"],
    [-1, "-1"],
    [1.5, "1.5"],
    [Number.NaN, "NaN"],
    ["1", '"1"'],
    [undefined, "undefined"],
  ])("rejects a returned channel of %s, naming it", (returned, shown) => {
    const wrapper = wrap(() => returned as number);
    expectIllegalArgument(
      () => wrapper.selectChannel({ region: "x", amount: 0 }),
      `returned ${shown}`,
      "[0, 3]",
    );
  });

  it("turns a returned -0 into channel 0", () => {
    const wrapper = wrap(() => -0);
    expect(Object.is(wrapper.selectChannel({ region: "x", amount: 0 }), 0)).toBe(true);
  });

  it("refuses to select before setup", () => {
    const wrapper = new CustomPartitionerWrapper<Order, string>(
      { partition: () => 0 },
      (o) => o.region,
    );
    expectIllegalState(() => wrapper.selectChannel({ region: "x", amount: 0 }), "CUSTOM", "setup");
  });

  it("is an all-to-all edge named CUSTOM", () => {
    const wrapper = wrap(() => 0);
    expect(wrapper.isPointwise()).toBe(false);
    expect(wrapper.isBroadcast()).toBe(false);
    expect(wrapper.toString()).toBe("CUSTOM");
  });
});
