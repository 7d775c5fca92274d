import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ConformanceWorkerNotFoundError } from "../errors.js";

/**
 * The worker script, relative to a compiled module of `conformance/`: the build keeps the source
 * tree's layout, so `dist/conformance/x.js` has the worker at `dist/worker/worker.js` — in the
 * repository and in an installed copy under `node_modules` alike.
 */
const FROM_COMPILED = "../worker/worker.js";
/**
 * The worker script, relative to a source module of `conformance/` (vitest in the repository):
 * child processes run JavaScript, so the worker is the compiled one of the same package, in the
 * `dist/` next to `src/`.
 */
const FROM_SOURCE = "../../dist/worker/worker.js";

/**
 * The conformance worker that belongs to the module at `moduleUrl` (a module of the kit's
 * `conformance/` folder, compiled `.js` or TypeScript source), as an absolute path.
 *
 * @throws ConformanceWorkerNotFoundError when the module is neither, or the worker file is missing.
 */
export function resolveWorkerScript(moduleUrl: string): string {
  const module = fileURLToPath(moduleUrl);
  const extension = path.extname(module);
  const relative =
    extension === ".js" ? FROM_COMPILED : extension === ".ts" ? FROM_SOURCE : undefined;
  if (relative === undefined) {
    throw new ConformanceWorkerNotFoundError(
      `the conformance kit cannot place its worker script: its module ${module} is neither compiled JavaScript (.js) nor TypeScript source (.ts)`,
    );
  }
  const worker = fileURLToPath(new URL(relative, moduleUrl));
  if (!existsSync(worker)) {
    const fix =
      extension === ".ts"
        ? "the kit runs from its sources and its package is not built: run `pnpm build`"
        : "the installed @sluice/shuffle-tck is incomplete: reinstall it";
    throw new ConformanceWorkerNotFoundError(
      `the conformance kit's worker script ${worker} (next to its module ${module}) does not exist; ${fix}`,
    );
  }
  return worker;
}
