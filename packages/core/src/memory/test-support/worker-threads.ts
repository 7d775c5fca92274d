import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { afterEach } from "vitest";

/** The built package: worker threads run JavaScript, so they import `dist/`. */
const CORE_DIST = new URL("../../../dist/index.js", import.meta.url);

/** The workers a test started, terminated after it, whatever happened. */
const started = new Set<Worker>();
afterEach(async () => {
  await Promise.all([...started].map((worker) => worker.terminate()));
  started.clear();
});

/** A worker thread running `body` (see {@link startInWorker}), and what it posts. */
export interface TestWorker {
  readonly worker: Worker;
  /** Resolves with what `body` returned; rejects with what it threw, or when the thread died. */
  readonly result: Promise<unknown>;
}

/**
 * Starts a worker thread that imports `@sluice/core` (built) and runs `body`, the source of an
 * async function of `(core, data, parentPort)`; `data` is its `workerData` (shared buffers stay
 * shared). The thread is terminated after the test.
 */
export function startInWorker(body: string, data: unknown): TestWorker {
  if (!existsSync(CORE_DIST)) {
    throw new Error(`${fileURLToPath(CORE_DIST)} is missing: run \`pnpm build\` first`);
  }
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
    import(${JSON.stringify(CORE_DIST.href)})
      .then((core) => new AsyncFunction("core", "data", "parentPort", ${JSON.stringify(body)})(core, workerData, parentPort))
      .then(
        (value) => parentPort.postMessage({ kind: "result", ok: true, value }),
        (error) => parentPort.postMessage({ kind: "result", ok: false, error: String((error && error.stack) || error) }),
      );
  `;
  const worker = new Worker(source, { eval: true, workerData: data });
  started.add(worker);
  const result = new Promise<unknown>((resolve, reject) => {
    worker.on(
      "message",
      (message: { kind?: string; ok: boolean; value?: unknown; error?: string }) => {
        if (message.kind !== "result") return;
        if (message.ok) resolve(message.value);
        else reject(new Error(message.error));
      },
    );
    worker.on("error", reject);
    worker.on("exit", (code) => reject(new Error(`the worker exited with code ${code}`)));
  });
  return { worker, result };
}

/** Runs `body` in one worker per element of `data`, at the same time; resolves with their results. */
export function runInWorkers(body: string, data: readonly unknown[]): Promise<unknown[]> {
  return Promise.all(data.map((item) => startInWorker(body, item).result));
}
