import {
  isPartitionException,
  PartitionFileCorruptedError,
  PartitionNotFoundError,
  ResultPartitionID,
} from "@sluice/core";
import { describe, expect, it } from "vitest";
import { deserializeThrowable, serializeThrowable } from "./serialized-throwable.js";

describe("SerializedThrowable", () => {
  it("carries a partition exception's partition across, as JSON", () => {
    const partitionId = new ResultPartitionID();
    const sent = new PartitionFileCorruptedError("/tmp/x.data: truncated", { partitionId });
    const wire = JSON.parse(JSON.stringify(serializeThrowable(sent)));
    expect(wire.partitionId).toBe(partitionId.toString());
    const received = deserializeThrowable(wire);
    expect(received).toBeInstanceOf(PartitionFileCorruptedError);
    expect(isPartitionException(received)).toBe(true);
    expect((received as PartitionFileCorruptedError).partitionId?.equals(partitionId)).toBe(true);
    expect(received.message).toBe(sent.message);
  });

  it("sends no partition for an error that names none, and drops one that does not parse", () => {
    expect(serializeThrowable(new PartitionNotFoundError("not here"))).not.toHaveProperty(
      "partitionId",
    );
    const received = deserializeThrowable({
      name: "PartitionNotFoundError",
      code: "SLUICE_ERR_PARTITION_NOT_FOUND",
      message: "not here",
      partitionId: "not-an-id",
    });
    expect(received).toBeInstanceOf(PartitionNotFoundError);
    expect(isPartitionException(received)).toBe(false);
  });
});
