export { BooleanSerializer } from "./boolean-serializer.js";
export { BytesSerializer } from "./bytes-serializer.js";
export { DataInputDeserializer } from "./data-input-deserializer.js";
export {
  DataOutputSerializer,
  type DataOutputSerializerOptions,
} from "./data-output-serializer.js";
export { DeserializationResult } from "./deserialization-result.js";
export { Float64Serializer } from "./float64-serializer.js";
export { Int32Serializer } from "./int32-serializer.js";
export { Int64Serializer } from "./int64-serializer.js";
export { JsonSerializer } from "./json-serializer.js";
export { type FieldSerializers, ObjectSerializer } from "./object-serializer.js";
export {
  DEFAULT_MAX_RECORD_SIZE,
  frameRecord,
  MAX_RECORD_SIZE_KEY,
  MIN_TAIL_BYTES,
  RECORD_LENGTH_BYTES,
  serializeRecord,
  serializeRecordHead,
} from "./record-serializer.js";
export { SPILL_FILE_SUFFIX } from "./spill-file.js";
export {
  DEFAULT_SPILLING_THRESHOLD,
  MIN_SPILLING_THRESHOLD,
  type RecordHolder,
  type RecordViewReader,
  SpillingAdaptiveSpanningRecordDeserializer,
  type SpillingAdaptiveSpanningRecordDeserializerOptions,
} from "./spilling-adaptive-spanning-record-deserializer.js";
export { StringSerializer } from "./string-serializer.js";
export { type TupleFieldSerializers, TupleSerializer } from "./tuple-serializer.js";
export type { SerializedType, TypeSerializer } from "./type-serializer.js";
