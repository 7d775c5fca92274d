/**
 * The test registry's process: Verdaccio on 127.0.0.1 with a port the system picks, its storage in
 * the test run's folder. Started (detached, so it outlives the test file that started it) by
 * `test-registry.ts`; stopped by the run's global teardown, or by itself once the run's folder or
 * the vitest process is gone, so a killed run leaves no server behind.
 *
 * It serves the `@sluice` packages that the run publishes, and nothing else: no uplink, so a name
 * it does not have is a 404, never a package of the same name from another registry. The clients
 * route only the `@sluice` scope here and take every other package from their usual registry.
 *
 * Usage: node registry-server.mjs <run folder> <vitest pid>. It writes `<run folder>/port` once it
 * listens.
 */
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [folder, vitestPid] = process.argv.slice(2);
if (folder === undefined || vitestPid === undefined) {
  throw new Error("usage: node registry-server.mjs <run folder> <vitest pid>");
}
const { runServer } = createRequire(import.meta.url)("verdaccio");

const server = await runServer({
  self_path: folder,
  storage: path.join(folder, "storage"),
  auth: { htpasswd: { file: path.join(folder, "htpasswd"), max_users: -1 } },
  uplinks: {},
  packages: {
    // Publishing needs no account: the server listens on loopback only, for this run only.
    "@sluice/*": { access: "$all", publish: "$anonymous" },
    "**": { access: "$all" },
  },
  web: { enable: false },
  log: { type: "stdout", format: "pretty", level: "warn" },
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  const written = path.join(folder, "port.tmp");
  writeFileSync(written, String(port));
  renameSync(written, path.join(folder, "port"));
});

function runEnded() {
  if (!existsSync(folder)) return true;
  try {
    process.kill(Number(vitestPid), 0);
    return false;
  } catch {
    return true;
  }
}

const watchdog = setInterval(() => {
  if (runEnded()) {
    clearInterval(watchdog);
    server.close();
    process.exit(0);
  }
}, 1_000);
