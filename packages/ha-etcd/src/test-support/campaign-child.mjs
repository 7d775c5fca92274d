// A job manager's candidacy in its own process, for tests that kill -9 or SIGSTOP a leader: it
// campaigns with the built @sluice/ha-etcd and prints "leader <token>" once elected.
import { readableConfigOf } from "@sluice/runtime-api";
import { EtcdHighAvailabilityServicesFactory } from "../../dist/index.js";

const [endpoint, storageDir, clusterId, ttl] = process.argv.slice(2);
const services = await new EtcdHighAvailabilityServicesFactory().createHAServices(
  readableConfigOf({
    "high-availability.etcd.endpoints": endpoint,
    "high-availability.storageDir": storageDir,
    "high-availability.cluster-id": clusterId,
    "high-availability.etcd.lease-ttl": ttl,
  }),
  { onWarning: (message) => process.stdout.write(`warning ${message}\n`) },
);
const election = services.getJobManagerLeaderElection();
await election.startLeaderElection({
  grantLeadership: (token) => {
    void election.confirmLeadership(token, `child-${process.pid}`).then(
      () => process.stdout.write(`leader ${token}\n`),
      (error) => process.stdout.write(`confirm-failed ${error.code}\n`),
    );
  },
  revokeLeadership: () => process.stdout.write("revoked\n"),
  handleError: (error) => process.stdout.write(`error ${error.message}\n`),
});
process.stdout.write("campaigning\n");
// Writes on request, one per line on stdin ("put <n>"), to show what a resumed leader can do.
process.stdin.setEncoding("utf8");
let pending = "";
process.stdin.on("data", (chunk) => {
  pending += chunk;
  for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
    const [verb, value] = pending.slice(0, nl).split(" ");
    pending = pending.slice(nl + 1);
    if (verb === "put") {
      services
        .getJobGraphStore()
        .putJobGraph("job-1", { writer: process.pid, value: Number(value) })
        .then(
          () => process.stdout.write(`put-ok ${value}\n`),
          (error) => process.stdout.write(`put-refused ${value} ${error.code}\n`),
        );
    }
  }
});
