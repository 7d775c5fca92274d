/**
 * Case 11: all-to-all at growing parallelism. The demo's word count (sources keyed to counters,
 * every source writing to every counter) at parallelism 2, 8, 16 and 32 across 4 task manager
 * processes on this machine, Sluice TCP: the words counted per CPU-second of the demo's processes
 * (records/s per busy core), the deploy time, from the last task manager's registration to
 * every subtask RUNNING, and the partition requests retried after PartitionNotFound (the tasks'
 * `Shuffle.Netty.Input.partitionRequestRetries`, scraped from the task managers). The CPU-seconds are the difference between a run of many words and one
 * of a few at the same parallelism, so that starting the processes, deploying and shutting down
 * (which grow with the parallelism but not with the words) do not count as moving words.
 */
import { runDemoCluster } from "../systems/demo-cluster.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";

const PARALLELISMS = [2, 8, 16, 32] as const;
const TASK_MANAGERS = 4;
/** Words per run: a few seconds at every parallelism, so that the start-up is not what counts. */
const QUICK_RECORDS = 2_000_000;
const FULL_RECORDS = 8_000_000;
/** Words of the run that measures what does not depend on the words. */
const FEW_RECORDS = 1_000;
const RUN_TIMEOUT_MS = 180_000;

const PER_CORE = "records/s per busy core";
const DEPLOY = "deploy ms";
const RETRIES = "PartitionNotFound retries";

export const case11: CaseDefinition = {
  id: 11,
  name: "All-to-all scale: the demo's word count at parallelism 2, 8, 16, 32 across 4 task managers, Sluice TCP",
  async run(report) {
    const o = report.options;
    const records = o.full ? FULL_RECORDS : QUICK_RECORDS;
    const runs = Math.min(o.runs, 3);
    const perCore = new Map<number, number[]>();
    const deploy = new Map<number, number[]>();
    const retries = new Map<number, number[]>();
    const failures = new Map<number, string>();
    for (let run = 1; run <= runs; run++) {
      for (const parallelism of PARALLELISMS) {
        if (failures.has(parallelism)) continue;
        log(`case 11 parallelism ${parallelism}: run ${run}/${runs}`);
        try {
          const args = (words: number) => [
            "--parallelism",
            String(parallelism),
            "--task-managers",
            String(TASK_MANAGERS),
            "--records",
            String(words),
          ];
          const few = await runDemoCluster(args(FEW_RECORDS), RUN_TIMEOUT_MS);
          const many = await runDemoCluster(args(records), RUN_TIMEOUT_MS);
          const invalid = [few, many].find((result) => !result.verified);
          if (invalid !== undefined) {
            failures.set(parallelism, `INVALID: ${invalid.error ?? "the counts differ"}`);
            continue;
          }
          const cpuMs = many.cpuMs - few.cpuMs;
          if (cpuMs > 0) {
            const values = perCore.get(parallelism) ?? [];
            values.push((many.records - few.records) / (cpuMs / 1000));
            perCore.set(parallelism, values);
          }
          if (many.partitionRequestRetries !== undefined) {
            const values = retries.get(parallelism) ?? [];
            values.push(many.partitionRequestRetries);
            retries.set(parallelism, values);
          }
          if (many.deployMs !== undefined) {
            const values = deploy.get(parallelism) ?? [];
            values.push(many.deployMs);
            deploy.set(parallelism, values);
          }
        } catch (error) {
          failures.set(parallelism, `failed: ${firstLine(error)}`);
        }
      }
    }
    const rows = PARALLELISMS.flatMap((parallelism) => {
      const system = `sluice-tcp p=${parallelism}`;
      const failed = failures.get(parallelism);
      if (failed !== undefined) {
        return [PER_CORE, DEPLOY, RETRIES].map((metric) => report.skipped(system, metric, failed));
      }
      return [
        report.row({
          system,
          metric: PER_CORE,
          higherIsBetter: true,
          values: perCore.get(parallelism) ?? [],
        }),
        report.row({
          system,
          metric: DEPLOY,
          higherIsBetter: false,
          values: deploy.get(parallelism) ?? [],
        }),
        report.row({
          system,
          metric: RETRIES,
          higherIsBetter: false,
          values: retries.get(parallelism) ?? [],
        }),
      ];
    });
    const perCoreRow = (p: number) =>
      rows.find((r) => r.system === `sluice-tcp p=${p}` && r.metric === PER_CORE);
    const at2 = perCoreRow(2);
    const at32 = perCoreRow(32);
    const deployAt32 = rows.find((r) => r.system === "sluice-tcp p=32" && r.metric === DEPLOY);
    const retriesAt32 = rows.find((r) => r.system === "sluice-tcp p=32" && r.metric === RETRIES);
    const goals = [
      report.goal({
        text: "records/s per busy core at parallelism 32 ≥ 0.7× of parallelism 2 (4 task managers)",
        measured:
          at2?.median !== undefined && at32?.median !== undefined && at2.median > 0
            ? at32.median / at2.median
            : undefined,
        comparison: "≥",
        target: 0.7,
        unit: "×",
        note: at32?.note ?? at2?.note,
      }),
      report.goal({
        text: "deploy at parallelism 32 (last task manager registered → every subtask RUNNING) ≤ 2 s",
        measured: deployAt32?.median,
        comparison: "≤",
        target: 2000,
        unit: "ms",
        note: deployAt32?.note,
      }),
      report.goal({
        text: "0 PartitionNotFound retries at parallelism 32 (the most of any run)",
        measured:
          retriesAt32 === undefined || retriesAt32.runs.length === 0
            ? undefined
            : Math.max(...retriesAt32.runs),
        comparison: "≤",
        target: 0,
        unit: "retries",
        note: retriesAt32?.note,
      }),
    ];
    return { rows, goals };
  },
};
