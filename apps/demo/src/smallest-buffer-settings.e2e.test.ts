/**
 * The demo with every buffer limit at its smallest valid value, over both bundled plugins: a
 * valid configuration never hangs (the job finishes and the counts verify), and a value below
 * the smallest is refused at start-up with exit code 2, naming its key.
 */
import {
  SMALLEST_BUFFER_SETTINGS,
  SMALLEST_BUFFER_SETTINGS_BASE,
} from "@sluice/shuffle-tck/transport";
import { describe, expect, it } from "vitest";
import { lastJsonLine, startDemo, useDemoProcesses } from "./test-support/demo-process.js";

useDemoProcesses();

function dynamicProperties(settings: Readonly<Record<string, unknown>>): string[] {
  return Object.entries(settings).flatMap(([key, value]) => ["-D", `${key}=${String(value)}`]);
}

describe.each(["tcp", "ws"])("the demo over %s with the smallest buffer settings", (shuffle) => {
  for (const [label, settings] of SMALLEST_BUFFER_SETTINGS) {
    it(`verifies the word count with ${label}`, async () => {
      const run = await startDemo([
        "--shuffle",
        shuffle,
        "--records",
        "20k",
        "--json",
        ...dynamicProperties({ ...SMALLEST_BUFFER_SETTINGS_BASE, ...settings }),
      ]).done;
      expect(run.code, run.stderr).toBe(0);
      expect(lastJsonLine(run.stdout)).toMatchObject({ verified: true, buffersReturned: true });
    }, 60_000);
  }

  it.each([
    [
      "taskmanager.network.memory.max-buffers-per-channel",
      { "taskmanager.network.memory.max-buffers-per-channel": 1 },
    ],
    [
      "taskmanager.network.memory.floating-buffers-per-gate",
      {
        "taskmanager.network.memory.buffers-per-channel": 0,
        "taskmanager.network.memory.floating-buffers-per-gate": 0,
      },
    ],
  ])(
    "refuses a value below the smallest at start-up, naming %s",
    async (key, settings) => {
      const run = await startDemo([
        "--shuffle",
        shuffle,
        "--records",
        "1k",
        ...dynamicProperties({ ...SMALLEST_BUFFER_SETTINGS_BASE, ...settings }),
      ]).done;
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(key);
    },
    60_000,
  );
});
