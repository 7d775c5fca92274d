// Builds the dashboard page (src/web-dashboard) into dist/web-dashboard: one bundle with uPlot
// and its stylesheet, so the page needs no network access. Run by `pnpm build` after tsc.
import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const pkg = path.dirname(fileURLToPath(import.meta.url));
const page = path.join(pkg, "src/web-dashboard");
const out = path.join(pkg, "dist/web-dashboard");

mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: path.join(page, "main.ts") },
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  minify: true,
  sourcemap: true,
  outdir: out,
  logLevel: "warning",
});
copyFileSync(path.join(page, "index.html"), path.join(out, "index.html"));
copyFileSync(path.join(page, "favicon.svg"), path.join(out, "favicon.svg"));
