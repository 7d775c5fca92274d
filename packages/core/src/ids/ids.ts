import { IllegalArgumentError } from "../errors.js";
import { AbstractId } from "./abstract-id.js";

/** Identifies one logical input channel of a consumer; the `receiverId` on the wire (16 bytes). */
export class InputChannelID extends AbstractId {
  static readonly BYTES = 16;
  constructor(bytes?: Uint8Array) {
    super(bytes);
  }
  static fromHex(hex: string): InputChannelID {
    return new InputChannelID(AbstractId.parseHex("InputChannelID", hex));
  }
  static readFrom(source: Uint8Array, offset: number): InputChannelID {
    return new InputChannelID(source.subarray(offset, offset + 16));
  }
}

/** Identifies an intermediate data set (the output of one operator, all its partitions). */
export class IntermediateDataSetID extends AbstractId {
  static readonly BYTES = 16;
  constructor(bytes?: Uint8Array) {
    super(bytes);
  }
  static fromHex(hex: string): IntermediateDataSetID {
    return new IntermediateDataSetID(AbstractId.parseHex("IntermediateDataSetID", hex));
  }
  static readFrom(source: Uint8Array, offset: number): IntermediateDataSetID {
    return new IntermediateDataSetID(source.subarray(offset, offset + 16));
  }
}

/** Identifies a worker process (Flink's ResourceID of a TaskManager). */
export class ResourceID extends AbstractId {
  static readonly BYTES = 16;
  constructor(bytes?: Uint8Array) {
    super(bytes);
  }
  static fromHex(hex: string): ResourceID {
    return new ResourceID(AbstractId.parseHex("ResourceID", hex));
  }
}

/** Identifies one job. */
export class JobID extends AbstractId {
  constructor(bytes?: Uint8Array) {
    super(bytes);
  }
  static fromHex(hex: string): JobID {
    return new JobID(AbstractId.parseHex("JobID", hex));
  }
}

/** Identifies one execution graph (part of an ExecutionAttemptID). */
export class ExecutionGraphID extends AbstractId {
  constructor(bytes?: Uint8Array) {
    super(bytes);
  }
  static fromHex(hex: string): ExecutionGraphID {
    return new ExecutionGraphID(AbstractId.parseHex("ExecutionGraphID", hex));
  }
}

/** Identifies a job vertex (an operator chain). */
export class JobVertexID extends AbstractId {
  constructor(bytes?: Uint8Array) {
    super(bytes);
  }
  static fromHex(hex: string): JobVertexID {
    return new JobVertexID(AbstractId.parseHex("JobVertexID", hex));
  }
}

function checkIndex(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fffffff) {
    throw new IllegalArgumentError(`${name} must be an integer in [0, 2^31), got ${value}`);
  }
  return value;
}

/**
 * Identifies one IntermediateResultPartition: the data set plus the partition number (20 bytes on
 * the wire: 16-byte data set id, int32 partition number).
 */
export class IntermediateResultPartitionID {
  static readonly BYTES = 20;
  readonly intermediateDataSetID: IntermediateDataSetID;
  readonly partitionNum: number;

  constructor(intermediateDataSetID = new IntermediateDataSetID(), partitionNum = 0) {
    this.intermediateDataSetID = intermediateDataSetID;
    this.partitionNum = checkIndex("partitionNum", partitionNum);
  }

  writeTo(target: Uint8Array, offset: number): void {
    this.intermediateDataSetID.writeTo(target, offset);
    new DataView(target.buffer, target.byteOffset, target.byteLength).setInt32(
      offset + 16,
      this.partitionNum,
    );
  }

  static readFrom(source: Uint8Array, offset: number): IntermediateResultPartitionID {
    const view = new DataView(source.buffer, source.byteOffset, source.byteLength);
    return new IntermediateResultPartitionID(
      IntermediateDataSetID.readFrom(source, offset),
      view.getInt32(offset + 16),
    );
  }

  equals(other: unknown): boolean {
    return other instanceof IntermediateResultPartitionID && other.toString() === this.toString();
  }

  /** `<dataSetHex>#<partitionNum>`. */
  toString(): string {
    return `${this.intermediateDataSetID.toString()}#${this.partitionNum}`;
  }

  toJSON(): string {
    return this.toString();
  }

  static parse(text: string): IntermediateResultPartitionID {
    const [hex, num] = String(text).split("#");
    if (hex === undefined || num === undefined || !/^\d+$/.test(num)) {
      throw new IllegalArgumentError(
        `IntermediateResultPartitionID must look like <32 hex>#<n>, got ${JSON.stringify(text)}`,
      );
    }
    return new IntermediateResultPartitionID(IntermediateDataSetID.fromHex(hex), Number(num));
  }
}

/**
 * Identifies one execution attempt of a subtask (40 bytes on the wire: ExecutionGraphID 16,
 * JobVertexID 16, subtaskIndex int32, attemptNumber int32), as Flink has since 1.16.
 */
export class ExecutionAttemptID {
  static readonly BYTES = 40;
  readonly executionGraphId: ExecutionGraphID;
  readonly jobVertexId: JobVertexID;
  readonly subtaskIndex: number;
  readonly attemptNumber: number;

  constructor(
    executionGraphId = new ExecutionGraphID(),
    jobVertexId = new JobVertexID(),
    subtaskIndex = 0,
    attemptNumber = 0,
  ) {
    this.executionGraphId = executionGraphId;
    this.jobVertexId = jobVertexId;
    this.subtaskIndex = checkIndex("subtaskIndex", subtaskIndex);
    this.attemptNumber = checkIndex("attemptNumber", attemptNumber);
  }

  writeTo(target: Uint8Array, offset: number): void {
    this.executionGraphId.writeTo(target, offset);
    this.jobVertexId.writeTo(target, offset + 16);
    const view = new DataView(target.buffer, target.byteOffset, target.byteLength);
    view.setInt32(offset + 32, this.subtaskIndex);
    view.setInt32(offset + 36, this.attemptNumber);
  }

  static readFrom(source: Uint8Array, offset: number): ExecutionAttemptID {
    const view = new DataView(source.buffer, source.byteOffset, source.byteLength);
    return new ExecutionAttemptID(
      new ExecutionGraphID(source.subarray(offset, offset + 16)),
      new JobVertexID(source.subarray(offset + 16, offset + 32)),
      view.getInt32(offset + 32),
      view.getInt32(offset + 36),
    );
  }

  equals(other: unknown): boolean {
    return other instanceof ExecutionAttemptID && other.toString() === this.toString();
  }

  /** `<graphHex>_<vertexHex>_<subtask>_<attempt>`. */
  toString(): string {
    return `${this.executionGraphId}_${this.jobVertexId}_${this.subtaskIndex}_${this.attemptNumber}`;
  }

  toJSON(): string {
    return this.toString();
  }

  static parse(text: string): ExecutionAttemptID {
    const parts = String(text).split("_");
    const [g, v, s, a] = parts;
    if (
      parts.length !== 4 ||
      g === undefined ||
      v === undefined ||
      !/^\d+$/.test(s ?? "") ||
      !/^\d+$/.test(a ?? "")
    ) {
      throw new IllegalArgumentError(
        `ExecutionAttemptID must look like <hex>_<hex>_<subtask>_<attempt>, got ${JSON.stringify(text)}`,
      );
    }
    return new ExecutionAttemptID(
      ExecutionGraphID.fromHex(g),
      JobVertexID.fromHex(v),
      Number(s),
      Number(a),
    );
  }
}

/**
 * Identifies a result partition of one execution attempt: the IntermediateResultPartitionID plus
 * the producer's ExecutionAttemptID (60 bytes on the wire).
 */
export class ResultPartitionID {
  static readonly BYTES = 60;
  readonly partitionId: IntermediateResultPartitionID;
  readonly producerId: ExecutionAttemptID;

  constructor(
    partitionId = new IntermediateResultPartitionID(),
    producerId = new ExecutionAttemptID(),
  ) {
    this.partitionId = partitionId;
    this.producerId = producerId;
  }

  writeTo(target: Uint8Array, offset: number): void {
    this.partitionId.writeTo(target, offset);
    this.producerId.writeTo(target, offset + IntermediateResultPartitionID.BYTES);
  }

  static readFrom(source: Uint8Array, offset: number): ResultPartitionID {
    return new ResultPartitionID(
      IntermediateResultPartitionID.readFrom(source, offset),
      ExecutionAttemptID.readFrom(source, offset + IntermediateResultPartitionID.BYTES),
    );
  }

  equals(other: unknown): boolean {
    return other instanceof ResultPartitionID && other.toString() === this.toString();
  }

  /** `<partition>@<producer>`; stable, usable as a map key. */
  toString(): string {
    return `${this.partitionId}@${this.producerId}`;
  }

  toJSON(): string {
    return this.toString();
  }

  static parse(text: string): ResultPartitionID {
    const [p, e, ...rest] = String(text).split("@");
    if (p === undefined || e === undefined || rest.length > 0) {
      throw new IllegalArgumentError(
        `ResultPartitionID must look like <partition>@<attempt>, got ${JSON.stringify(text)}`,
      );
    }
    return new ResultPartitionID(
      IntermediateResultPartitionID.parse(p),
      ExecutionAttemptID.parse(e),
    );
  }
}
