import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { TEST_REGISTRY_RUN } from "./test-registry-run.js";

/**
 * Gives the run a folder for its test registry, which the first test file that installs the
 * packages starts (`test-registry.ts`): a run that installs nothing pays nothing. The teardown
 * stops the registry and deletes the folder.
 */
export default function setup(project: TestProject): () => void {
  const folder = mkdtempSync(path.join(tmpdir(), "sluice-test-registry-"));
  project.provide(TEST_REGISTRY_RUN, { folder, vitestPid: process.pid });
  return () => {
    const pidFile = path.join(folder, "server.pid");
    if (existsSync(pidFile)) {
      try {
        process.kill(Number(readFileSync(pidFile, "utf8")), "SIGTERM");
      } catch (error) {
        // Already gone: it stops by itself when the run's folder or vitest is.
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
      }
    }
    rmSync(folder, { recursive: true, force: true });
  };
}
