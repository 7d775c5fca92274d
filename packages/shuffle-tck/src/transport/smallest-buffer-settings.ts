import type { RawConfig } from "./in-process-cluster.js";

/**
 * The network memory and segment size the smallest-value settings start from: small enough that
 * records span buffers and pools run dry, large enough for a small job's channels.
 */
export const SMALLEST_BUFFER_SETTINGS_BASE: RawConfig = {
  "taskmanager.memory.network.min": "4mb",
  "taskmanager.memory.network.max": "4mb",
  "taskmanager.memory.segment-size": "4kb",
};

/**
 * Every per-channel and per-gate buffer limit at its smallest value a worker accepts, one at a
 * time and all at once (labelled), on top of {@link SMALLEST_BUFFER_SETTINGS_BASE}. Values below
 * these are refused at start-up, naming the key.
 */
export const SMALLEST_BUFFER_SETTINGS: readonly (readonly [string, RawConfig])[] = [
  ["max-buffers-per-channel = 2", { "taskmanager.network.memory.max-buffers-per-channel": 2 }],
  ["buffers-per-channel = 0", { "taskmanager.network.memory.buffers-per-channel": 0 }],
  ["floating-buffers-per-gate = 1", { "taskmanager.network.memory.floating-buffers-per-gate": 1 }],
  [
    "max-overdraft-buffers-per-gate = 0",
    { "taskmanager.network.memory.max-overdraft-buffers-per-gate": 0 },
  ],
  [
    "read-buffer.required-per-gate.max = 1",
    { "taskmanager.network.memory.read-buffer.required-per-gate.max": 1 },
  ],
  ["segment-size = 256 bytes", { "taskmanager.memory.segment-size": "256b" }],
  [
    "all of them at once",
    {
      "taskmanager.network.memory.max-buffers-per-channel": 2,
      "taskmanager.network.memory.buffers-per-channel": 0,
      "taskmanager.network.memory.floating-buffers-per-gate": 1,
      "taskmanager.network.memory.max-overdraft-buffers-per-gate": 0,
      "taskmanager.network.memory.read-buffer.required-per-gate.max": 1,
      "taskmanager.memory.segment-size": "256b",
      "taskmanager.memory.min-segment-size": "256b",
    },
  ],
];
