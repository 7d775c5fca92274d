import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Configuration } from "../config/configuration.js";
import { JobDeployer } from "./job-deployer.js";
import { JobGraph } from "./job-graph.js";

const APPLICATION_DIR = fileURLToPath(new URL("../..", import.meta.url));

describe("JobDeployer", () => {
  it("refuses to deploy after close with IllegalStateError naming the job", async () => {
    const deployer = await JobDeployer.start(
      new Configuration({
        "shuffle-service-factory.class": "@sluice/network#LocalShuffleServiceFactory",
      }),
      { loader: { applicationDirs: [APPLICATION_DIR] } },
    );
    await deployer.close();
    const graph = new JobGraph("late job");
    graph.addVertex({ name: "Only", parallelism: 1, invokable: "noop" });
    const attempt = deployer.deploy(graph, () => {
      throw new Error("placement must not be asked");
    });
    await expect(attempt).rejects.toMatchObject({
      code: "SLUICE_ERR_ILLEGAL_STATE",
      name: "IllegalStateError",
    });
    await expect(attempt).rejects.toThrow("cannot deploy job late job: the JobDeployer is closed");
  });
});
