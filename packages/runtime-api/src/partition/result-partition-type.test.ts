import { describe, expect, it } from "vitest";
import { ResultPartitionType, resultPartitionTypeOf } from "./result-partition-type.js";

describe("ResultPartitionType", () => {
  it("gives BLOCKING Flink's properties: reconsumable, unbounded, released by the scheduler", () => {
    expect(ResultPartitionType.BLOCKING).toMatchObject({
      isBlocking: true,
      isPipelined: false,
      isBounded: false,
      isReconsumable: true,
      releasedBy: "scheduler",
      consumingConstraint: "BLOCKING",
      supportsCompression: true,
    });
  });

  it("gives PIPELINED an unbounded pool and PIPELINED_BOUNDED a bounded one, both released upstream", () => {
    expect(ResultPartitionType.PIPELINED).toMatchObject({
      isPipelined: true,
      isBounded: false,
      isReconsumable: false,
      releasedBy: "upstream",
      supportsCompression: false,
    });
    expect(ResultPartitionType.PIPELINED_BOUNDED).toMatchObject({
      isPipelined: true,
      isBounded: true,
      isReconsumable: false,
      releasedBy: "upstream",
    });
  });

  it("lets hybrid types be consumed while produced without being pipelined", () => {
    expect(ResultPartitionType.HYBRID_FULL).toMatchObject({
      isPipelined: false,
      canBePipelinedConsumed: true,
      isHybrid: true,
      isReconsumable: true,
    });
    expect(ResultPartitionType.HYBRID_SELECTIVE.isReconsumable).toBe(false);
    expect(ResultPartitionType.BLOCKING_PERSISTENT.isPersistent).toBe(true);
  });

  it("names every value after its key and freezes it", () => {
    for (const [name, type] of Object.entries(ResultPartitionType)) {
      expect(type.name).toBe(name);
      expect(Object.isFrozen(type)).toBe(true);
      expect(resultPartitionTypeOf(name)).toBe(type);
    }
  });

  it("maps a value from another copy of the package to this copy's singleton", () => {
    expect(resultPartitionTypeOf({ ...ResultPartitionType.PIPELINED })).toBe(
      ResultPartitionType.PIPELINED,
    );
    expect(resultPartitionTypeOf("toString")).toBeUndefined();
    expect(resultPartitionTypeOf("pipelined")).toBeUndefined();
  });
});
