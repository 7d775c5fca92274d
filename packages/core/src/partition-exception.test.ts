import { describe, expect, it } from "vitest";
import { reconstructError } from "./error-reconstruction.js";
import { ErrorCodes, ProducerFailedError, SluiceError } from "./errors.js";
import { ResultPartitionID } from "./ids/ids.js";
import {
  isPartitionException,
  PartitionConnectionError,
  PartitionFileCorruptedError,
  PartitionNotFoundError,
} from "./partition-exception.js";

describe("the PartitionException family", () => {
  const partitionId = new ResultPartitionID();

  it.each([
    ["PartitionNotFoundError", PartitionNotFoundError, ErrorCodes.PARTITION_NOT_FOUND],
    ["PartitionConnectionError", PartitionConnectionError, ErrorCodes.PARTITION_CONNECTION],
    [
      "PartitionFileCorruptedError",
      PartitionFileCorruptedError,
      ErrorCodes.PARTITION_FILE_CORRUPTED,
    ],
  ] as const)(
    "%s names its partition and producer and is a partition exception",
    (name, cls, code) => {
      const error = new cls("could not read", { partitionId });
      expect(error).toBeInstanceOf(cls);
      expect(error).toBeInstanceOf(SluiceError);
      expect(error).toMatchObject({ name, code });
      expect(error.partitionId).toBe(partitionId);
      expect(error.message).toBe(
        `could not read [partition ${partitionId.partitionId} of producer attempt ${partitionId.producerId}]`,
      );
      expect(isPartitionException(error)).toBe(true);
    },
  );

  it("does not repeat the partition in a message that names its producer already", () => {
    const error = new PartitionNotFoundError(`result partition ${partitionId} not found`, {
      partitionId,
    });
    expect(error.message).toBe(`result partition ${partitionId} not found`);
  });

  it("is no partition exception without a partition, nor for another code", () => {
    // A control-plane connection that fails has the code but names no partition.
    expect(isPartitionException(new PartitionConnectionError("job manager unreachable"))).toBe(
      false,
    );
    const other = Object.assign(new ProducerFailedError("failed"), { partitionId });
    expect(isPartitionException(other)).toBe(false);
    // A plain object of the right shape is not a SluiceError.
    expect(isPartitionException({ code: ErrorCodes.PARTITION_NOT_FOUND, partitionId })).toBe(false);
    expect(isPartitionException(undefined)).toBe(false);
  });

  it("keeps the partition through reconstructError, the class and the code", () => {
    const sent = new PartitionConnectionError("connection lost", { partitionId });
    const rebuilt = reconstructError(sent.code, sent.name, sent.message, { partitionId });
    expect(rebuilt).toBeInstanceOf(PartitionConnectionError);
    expect(rebuilt.message).toBe(sent.message);
    expect(isPartitionException(rebuilt)).toBe(true);
    expect((rebuilt as PartitionConnectionError).partitionId?.equals(partitionId)).toBe(true);
    // Without details it is the same class, naming no partition.
    expect(isPartitionException(reconstructError(sent.code, sent.name, sent.message))).toBe(false);
  });
});
