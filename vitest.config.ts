import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // Resolve workspace packages (@sluice/*) to their TypeScript source via the
  // "@sluice/source" export condition: tests need no prior build.
  ssr: { resolve: { conditions: ["@sluice/source", ...defaultServerConditions] } },
  test: {
    // Only sources: tsc -b also emits *.test.js into dist/, and Vitest 4's
    // default exclude no longer skips dist/.
    include: ["**/src/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    globalSetup: ["./vitest.global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
