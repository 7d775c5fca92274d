import { defineError, ErrorCodes } from "@sluice/core";

/**
 * Keyed state could not be snapshotted or restored: a restored snapshot of another format,
 * version, max parallelism or serializer than the backend's, two snapshots holding the same key
 * group, or a key outside the key groups of the subtask that keeps it. The message names the
 * backend, the state and what differs. Code: `SLUICE_ERR_KEYED_STATE`.
 */
export const KeyedStateError = defineError("KeyedStateError", ErrorCodes.KEYED_STATE);
/** An instance of {@link KeyedStateError}. */
export type KeyedStateError = InstanceType<typeof KeyedStateError>;
