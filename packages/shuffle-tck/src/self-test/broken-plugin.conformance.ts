/**
 * The conformance suite against one broken plugin (SLUICE_TCK_BROKEN_PLUGIN, an export of
 * broken-plugins.ts, or "none" for the working plugin it decorates). Run only by the suite's
 * self-test, in a vitest process of its own: the cases are expected to fail.
 */
import { fileURLToPath } from "node:url";
import { describeShuffleServiceConformance } from "../conformance/describe-conformance.js";

const broken = process.env.SLUICE_TCK_BROKEN_PLUGIN ?? "none";
const brokenModule = fileURLToPath(
  new URL("../../dist/self-test/broken-plugins.js", import.meta.url),
);

describeShuffleServiceConformance({
  name: broken,
  factory:
    broken === "none"
      ? (process.env.SLUICE_TCK_INNER_PLUGIN as string)
      : `${brokenModule}#${broken}`,
});
