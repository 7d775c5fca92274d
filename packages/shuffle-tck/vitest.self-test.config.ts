import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";

/** Runs the conformance suite against one broken plugin (see src/self-test/). */
export default defineConfig({
  ssr: { resolve: { conditions: ["@sluice/source", ...defaultServerConditions] } },
  test: {
    include: ["src/self-test/broken-plugin.conformance.ts"],
    root: import.meta.dirname,
    testTimeout: 60_000,
    hookTimeout: 30_000,
  },
});
