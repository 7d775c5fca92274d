import {
  ErrorCodes,
  ExecutionAttemptID,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  ResourceID,
  ResultPartitionID,
  type SluiceError,
} from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { DescriptorError } from "../errors.js";
import { ResultPartitionType } from "../partition/result-partition-type.js";
import {
  createInputGateDeploymentDescriptor,
  type InputGateDeploymentDescriptor,
  InputGateDeploymentDescriptorCodec,
} from "./input-gate-deployment-descriptor.js";
import type { DescriptorCodec } from "./json-fields.js";
import { type PartitionDescriptor, PartitionDescriptorCodec } from "./partition-descriptor.js";
import { createPartitionInfo, PartitionInfoCodec } from "./partition-info.js";
import { type ProducerDescriptor, ProducerDescriptorCodec } from "./producer-descriptor.js";
import {
  createResultPartitionDeploymentDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
} from "./result-partition-deployment-descriptor.js";
import {
  createNetworkShuffleDescriptor,
  createUnknownShuffleDescriptor,
  isLocalTo,
  isNetworkShuffleDescriptor,
  isUnknownShuffleDescriptor,
  type ShuffleDescriptor,
  ShuffleDescriptorCodec,
} from "./shuffle-descriptor.js";
import {
  type TaskInputsOutputsDescriptor,
  TaskInputsOutputsDescriptorCodec,
} from "./task-inputs-outputs-descriptor.js";

const dataSet = new IntermediateDataSetID();
const producerLocation = new ResourceID();
const attempt = new ExecutionAttemptID(undefined, undefined, 3, 1);

function partitionId(n = 0): ResultPartitionID {
  return new ResultPartitionID(new IntermediateResultPartitionID(dataSet, n), attempt);
}

const partitionDescriptor: PartitionDescriptor = {
  resultId: dataSet,
  totalNumberOfPartitions: 4,
  partitionId: new IntermediateResultPartitionID(dataSet, 2),
  partitionType: ResultPartitionType.PIPELINED_BOUNDED,
  numberOfSubpartitions: 8,
  connectionIndex: 1,
  isBroadcast: false,
  isAllToAllDistribution: true,
};

const producerDescriptor: ProducerDescriptor = {
  producerLocation,
  producerExecutionId: attempt,
  address: "10.0.0.7",
  dataPort: 41234,
};

const remote = createNetworkShuffleDescriptor(partitionId(2), producerLocation, {
  kind: "remote",
  host: "10.0.0.7",
  port: 41234,
  connectionIndex: 1,
});
const local = createNetworkShuffleDescriptor(partitionId(1), producerLocation, { kind: "local" });
const unknown = createUnknownShuffleDescriptor(partitionId(3));
const thirdParty: ShuffleDescriptor = {
  kind: "acme-remote-shuffle",
  resultPartitionId: partitionId(0),
  isUnknown: false,
  storesLocalResourcesOn: undefined,
  plugin: { bucket: "s3://acme/shuffle", replicas: 3, tags: ["a", null, { deep: true }] },
};

/** Compares descriptors structurally, ids by their string form. */
function normalize(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_key, v) => (v === undefined ? "<undefined>" : v)));
}

function roundTrip<T, J>(codec: DescriptorCodec<T, J>, value: T): T {
  const text = codec.serialize(value);
  expect(JSON.parse(text).version).toBe(1);
  const back = codec.deserialize(text);
  expect(normalize(back)).toEqual(normalize(value));
  expect(codec.serialize(back)).toBe(text);
  // The JSON form survives structured cloning (IPC between processes).
  expect(normalize(codec.fromJSON(structuredClone(codec.toJSON(value))))).toEqual(normalize(value));
  return back;
}

function descriptorError(fn: () => unknown): SluiceError {
  return expectError(fn, DescriptorError, ErrorCodes.DESCRIPTOR);
}

describe("ShuffleDescriptor JSON", () => {
  it("round-trips a remote network descriptor with real id objects", () => {
    const back = roundTrip(ShuffleDescriptorCodec, remote);
    expect(isNetworkShuffleDescriptor(back)).toBe(true);
    expect(back.resultPartitionId).toBeInstanceOf(ResultPartitionID);
    expect(back.resultPartitionId.equals(remote.resultPartitionId)).toBe(true);
    expect(back.storesLocalResourcesOn?.equals(producerLocation)).toBe(true);
  });

  it("round-trips a local-only network descriptor", () => {
    const back = roundTrip(ShuffleDescriptorCodec, local);
    expect(isNetworkShuffleDescriptor(back) && back.connection).toEqual({ kind: "local" });
  });

  it("round-trips the unknown placeholder", () => {
    const back = roundTrip(ShuffleDescriptorCodec, unknown);
    expect(isUnknownShuffleDescriptor(back)).toBe(true);
    expect(back.storesLocalResourcesOn).toBeUndefined();
  });

  it("round-trips a third-party descriptor with the plugin's own fields", () => {
    const back = roundTrip(ShuffleDescriptorCodec, thirdParty);
    expect(back.kind).toBe("acme-remote-shuffle");
    expect(back.plugin).toEqual(thirdParty.plugin);
  });

  it("keeps plugin fields on network descriptors too", () => {
    const withExtra = createNetworkShuffleDescriptor(
      partitionId(0),
      producerLocation,
      { kind: "local" },
      { tier: "memory" },
    );
    expect(roundTrip(ShuffleDescriptorCodec, withExtra).plugin).toEqual({ tier: "memory" });
  });

  it("documents its format in the JSON it writes", () => {
    expect(ShuffleDescriptorCodec.toJSON(remote)).toEqual({
      version: 1,
      kind: "network",
      resultPartitionId: remote.resultPartitionId.toString(),
      producerLocation: producerLocation.toString(),
      connection: { kind: "remote", host: "10.0.0.7", port: 41234, connectionIndex: 1 },
    });
  });

  it("tells whether the producer is local to a consumer", () => {
    expect(isLocalTo(remote, producerLocation)).toBe(true);
    expect(isLocalTo(remote, new ResourceID())).toBe(false);
  });

  it.each([
    ["not JSON", "{version: 1", /not valid JSON/],
    ["a JSON array", "[]", /must be an object/],
    [
      "a future version",
      JSON.stringify({ ...ShuffleDescriptorCodec.toJSON(remote), version: 2 }),
      /"version" must be 1/,
    ],
    ["no version", JSON.stringify({ kind: "unknown", resultPartitionId: "x" }), /"version"/],
    [
      "a bad partition id",
      JSON.stringify({ version: 1, kind: "unknown", resultPartitionId: "nope" }),
      /"resultPartitionId" must be a ResultPartitionID/,
    ],
    [
      "a bad producer location",
      JSON.stringify({ ...ShuffleDescriptorCodec.toJSON(remote), producerLocation: "xyz" }),
      /"producerLocation" must be a ResourceID/,
    ],
    [
      "a port out of range",
      JSON.stringify({
        ...ShuffleDescriptorCodec.toJSON(remote),
        connection: { kind: "remote", host: "h", port: 70000, connectionIndex: 0 },
      }),
      /"connection.port" must be an integer in \[1, 65535\], got 70000/,
    ],
    [
      "an unknown connection kind",
      JSON.stringify({ ...ShuffleDescriptorCodec.toJSON(remote), connection: { kind: "pigeon" } }),
      /"connection.kind" must be "remote" or "local"/,
    ],
    [
      "a non-JSON plugin field",
      JSON.stringify({ ...ShuffleDescriptorCodec.toJSON(thirdParty), plugin: "flat" }),
      /"plugin" must be an object/,
    ],
    [
      "a third-party kind without isUnknown",
      JSON.stringify({ version: 1, kind: "acme", resultPartitionId: partitionId().toString() }),
      /"isUnknown" must be true or false, got nothing \(missing\)/,
    ],
  ])("rejects %s with SLUICE_ERR_DESCRIPTOR naming the field", (_name, text, message) => {
    const error = descriptorError(() => ShuffleDescriptorCodec.deserialize(text));
    expect(error.message).toMatch(message);
    expect(error.message).toContain("ShuffleDescriptor");
  });

  it("rejects invalid connection info when creating a network descriptor", () => {
    descriptorError(() =>
      createNetworkShuffleDescriptor(partitionId(), producerLocation, {
        kind: "remote",
        host: "",
        port: 1,
        connectionIndex: 0,
      }),
    );
    descriptorError(() =>
      createNetworkShuffleDescriptor(partitionId(), producerLocation, {
        kind: "remote",
        host: "h",
        port: 0,
        connectionIndex: 0,
      }),
    );
    descriptorError(() =>
      createNetworkShuffleDescriptor(partitionId(), producerLocation, {
        kind: "remote",
        host: "h",
        port: 1,
        connectionIndex: -1,
      }),
    );
  });
});

describe("PartitionDescriptor JSON", () => {
  it("round-trips, keeping the partition type singleton", () => {
    const back = roundTrip(PartitionDescriptorCodec, partitionDescriptor);
    expect(back.partitionType).toBe(ResultPartitionType.PIPELINED_BOUNDED);
    expect(back.partitionId.equals(partitionDescriptor.partitionId)).toBe(true);
  });

  it("round-trips the optional consumer-undefined flag", () => {
    const back = roundTrip(PartitionDescriptorCodec, {
      ...partitionDescriptor,
      isNumberOfPartitionConsumerUndefined: true,
    });
    expect(back.isNumberOfPartitionConsumerUndefined).toBe(true);
  });

  it.each([
    [
      "an unknown partition type",
      { partitionType: "PIPELINED_FAST" },
      /"partitionType" must name a ResultPartitionType/,
    ],
    [
      "zero subpartitions",
      { numberOfSubpartitions: 0 },
      /"numberOfSubpartitions" must be an integer in \[1,/,
    ],
    ["zero partitions", { totalNumberOfPartitions: 0 }, /"totalNumberOfPartitions"/],
    ["a fractional connection index", { connectionIndex: 1.5 }, /"connectionIndex"/],
    ["a string flag", { isBroadcast: "false" }, /"isBroadcast" must be true or false/],
    [
      "a partition of another data set",
      { partitionId: `${new IntermediateDataSetID()}#2` },
      /must belong to data set/,
    ],
    [
      "a partition number beyond the total",
      { partitionId: `${dataSet}#4` },
      /below totalNumberOfPartitions/,
    ],
  ])("rejects %s", (_name, patch, message) => {
    const json = { ...PartitionDescriptorCodec.toJSON(partitionDescriptor), ...patch };
    expect(descriptorError(() => PartitionDescriptorCodec.fromJSON(json)).message).toMatch(message);
  });
});

describe("ProducerDescriptor JSON", () => {
  it("round-trips", () => {
    const back = roundTrip(ProducerDescriptorCodec, producerDescriptor);
    expect(back.producerExecutionId.equals(attempt)).toBe(true);
  });

  it("accepts a negative data port for local-only producers and rejects a bad attempt id", () => {
    roundTrip(ProducerDescriptorCodec, { ...producerDescriptor, dataPort: -1 });
    const json = {
      ...ProducerDescriptorCodec.toJSON(producerDescriptor),
      producerExecutionId: "abc",
    };
    expect(descriptorError(() => ProducerDescriptorCodec.fromJSON(json)).message).toMatch(
      /"producerExecutionId" must be an ExecutionAttemptID/,
    );
  });
});

describe("ResultPartitionDeploymentDescriptor JSON", () => {
  const deployment = createResultPartitionDeploymentDescriptor(partitionDescriptor, remote, 128);

  it("round-trips with nested descriptors", () => {
    const back = roundTrip(ResultPartitionDeploymentDescriptorCodec, deployment);
    expect(back.maxParallelism).toBe(128);
    expect(isNetworkShuffleDescriptor(back.shuffleDescriptor)).toBe(true);
  });

  it("accepts a max parallelism of 32768 and rejects 32769 and 0", () => {
    createResultPartitionDeploymentDescriptor(partitionDescriptor, remote, 32768);
    descriptorError(() =>
      createResultPartitionDeploymentDescriptor(partitionDescriptor, remote, 32769),
    );
    descriptorError(() =>
      createResultPartitionDeploymentDescriptor(partitionDescriptor, remote, 0),
    );
    const json = {
      ...ResultPartitionDeploymentDescriptorCodec.toJSON(deployment),
      maxParallelism: 40000,
    };
    expect(
      descriptorError(() => ResultPartitionDeploymentDescriptorCodec.fromJSON(json)).message,
    ).toMatch(/"maxParallelism" must be an integer in \[1, 32768\], got 40000/);
  });

  it("rejects a shuffle descriptor of another partition", () => {
    descriptorError(() =>
      createResultPartitionDeploymentDescriptor(partitionDescriptor, local, 128),
    );
  });

  it("names the path of a bad nested field", () => {
    const json = ResultPartitionDeploymentDescriptorCodec.toJSON(deployment);
    const bad = { ...json, shuffleDescriptor: { ...json.shuffleDescriptor, producerLocation: 42 } };
    const error = descriptorError(() => ResultPartitionDeploymentDescriptorCodec.fromJSON(bad));
    expect(error.message).toContain('in field "shuffleDescriptor"');
    expect(error.message).toContain('"producerLocation" must be a string, got 42');
  });
});

describe("InputGateDeploymentDescriptor JSON", () => {
  const gate: InputGateDeploymentDescriptor = createInputGateDeploymentDescriptor(
    dataSet,
    ResultPartitionType.PIPELINED_BOUNDED,
    { start: 2, end: 3 },
    [remote, local, unknown, thirdParty],
  );

  it("round-trips one descriptor per channel, in order, of every kind", () => {
    const back = roundTrip(InputGateDeploymentDescriptorCodec, gate);
    expect(back.shuffleDescriptors.map((d) => d.kind)).toEqual([
      "network",
      "network",
      "unknown",
      "acme-remote-shuffle",
    ]);
    expect(back.consumedSubpartitionIndexRange).toEqual({ start: 2, end: 3 });
  });

  it("rejects an inverted subpartition range, no channels, and foreign partitions", () => {
    descriptorError(() =>
      createInputGateDeploymentDescriptor(
        dataSet,
        ResultPartitionType.BLOCKING,
        { start: 3, end: 2 },
        [remote],
      ),
    );
    descriptorError(() =>
      createInputGateDeploymentDescriptor(
        dataSet,
        ResultPartitionType.BLOCKING,
        { start: 0, end: 0 },
        [],
      ),
    );
    descriptorError(() =>
      createInputGateDeploymentDescriptor(
        new IntermediateDataSetID(),
        ResultPartitionType.BLOCKING,
        { start: 0, end: 0 },
        [remote],
      ),
    );
  });

  it("names the channel index of a bad shuffle descriptor", () => {
    const json = InputGateDeploymentDescriptorCodec.toJSON(gate);
    const bad = {
      ...json,
      shuffleDescriptors: [json.shuffleDescriptors[0], { version: 1, kind: "unknown" }],
    };
    const error = descriptorError(() => InputGateDeploymentDescriptorCodec.fromJSON(bad));
    expect(error.message).toContain('"shuffleDescriptors[1]"');
    expect(error.message).toContain('"resultPartitionId" must be a string');
  });

  it("rejects a range whose end is before its start in JSON", () => {
    const json = {
      ...InputGateDeploymentDescriptorCodec.toJSON(gate),
      consumedSubpartitionIndexRange: { start: 5, end: 1 },
    };
    expect(
      descriptorError(() => InputGateDeploymentDescriptorCodec.fromJSON(json)).message,
    ).toMatch(/"consumedSubpartitionIndexRange.end" must be an integer in \[5,/);
  });
});

describe("PartitionInfo JSON", () => {
  it("round-trips", () => {
    const back = roundTrip(PartitionInfoCodec, createPartitionInfo(dataSet, remote));
    expect(back.intermediateDataSetId.equals(dataSet)).toBe(true);
  });

  it("rejects a descriptor of another data set", () => {
    descriptorError(() => createPartitionInfo(new IntermediateDataSetID(), remote));
  });
});

describe("TaskInputsOutputsDescriptor JSON", () => {
  const other = new IntermediateDataSetID().toString();
  const descriptor: TaskInputsOutputsDescriptor = {
    inputGateNums: 1,
    inputChannelNums: { [dataSet.toString()]: 4 },
    partitionReuseCount: { [dataSet.toString()]: 1 },
    subpartitionNums: { [other]: 8 },
    inputPartitionTypes: { [dataSet.toString()]: ResultPartitionType.PIPELINED_BOUNDED },
    partitionTypes: { [other]: ResultPartitionType.BLOCKING },
  };

  it("round-trips", () => {
    const back = roundTrip(TaskInputsOutputsDescriptorCodec, descriptor);
    expect(back.partitionTypes[other]).toBe(ResultPartitionType.BLOCKING);
  });

  it("rejects keys that are not data set ids and negative counts", () => {
    const json = TaskInputsOutputsDescriptorCodec.toJSON(descriptor);
    descriptorError(() =>
      TaskInputsOutputsDescriptorCodec.fromJSON({ ...json, inputChannelNums: { nope: 1 } }),
    );
    descriptorError(() =>
      TaskInputsOutputsDescriptorCodec.fromJSON({ ...json, subpartitionNums: { [other]: -1 } }),
    );
  });
});
