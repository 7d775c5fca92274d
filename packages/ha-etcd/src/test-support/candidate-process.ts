import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { waitFor } from "@sluice/core/testing";
import type { EtcdFixture } from "./ha-fixture.js";

const SCRIPT = fileURLToPath(new URL("./campaign-child.mjs", import.meta.url));
const BUILT = fileURLToPath(new URL("../../dist/index.js", import.meta.url));

/** A candidate job manager in a child process (see campaign-child.mjs). */
export interface Candidate {
  readonly child: ChildProcess;
  readonly clusterId: string;
  /** Every line it printed so far. */
  readonly lines: string[];
  /** Resolves with the first line matching `pattern` (printed before or after the call). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends one command line. */
  write(line: string): void;
}

const spawned = new Set<ChildProcess>();

/** Kills every candidate still running (a test's clean-up). */
export function killCandidates(): void {
  for (const child of spawned) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
    }
  }
  spawned.clear();
}

/**
 * Starts a candidate of the fixture's current cluster in its own Node process, on the built
 * package (a kill -9 or SIGSTOP must hit a real process, with its own event loop).
 */
export function spawnCandidate(
  fixture: EtcdFixture,
  ttl: string,
  clusterId = fixture.clusterId(),
): Candidate {
  if (!existsSync(BUILT)) {
    throw new Error(
      `${BUILT} is missing: run pnpm build first (the candidate process runs the built package)`,
    );
  }
  const child = spawn(
    process.execPath,
    [SCRIPT, fixture.etcd().endpoint, fixture.storageDir(), clusterId, ttl],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  spawned.add(child);
  const lines: string[] = [];
  let partial = "";
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (chunk: string) => {
    partial += chunk;
    const parts = partial.split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
  });
  return {
    child,
    clusterId,
    lines,
    async waitFor(pattern, timeoutMs = 15_000) {
      await waitFor(() => lines.some((line) => pattern.test(line)), {
        what: `a line matching ${pattern} from candidate ${child.pid} (printed: ${lines.join(" | ")})`,
        timeoutMs,
      });
      return lines.find((line) => pattern.test(line)) as string;
    },
    write(line) {
      child.stdin?.write(`${line}\n`);
    },
  };
}
