/**
 * A job manager in a process of its own, for failover tests that kill -9 the leader: it starts
 * with the configuration argv[2] holds (JSON of flat keys, the high-availability keys among
 * them), prints "listening <port>" once its control plane listens and "leader <token>" once it
 * is elected, and runs until it is killed. It runs the compiled packages.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { JobManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";

const configuration = new Configuration(JSON.parse(process.argv[2]));
const jobManager = await JobManager.start(configuration, {
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  onLeadershipGranted: (token) => process.stdout.write(`leader ${token}\n`),
  onTaskManagerRegistered: (tm) => process.stdout.write(`registered ${tm.pid}\n`),
  onWarning: () => {},
});
process.stdout.write(`listening ${jobManager.port}\n`);
