/**
 * A keyed job module for the cluster tests, in JavaScript because task manager processes load
 * it (child processes do not read TypeScript; they run the built packages): numbers from two
 * source subtasks, rebalanced, keyed by `n % 101`, counted per key in keyed state. It emits every
 * running count, so the output is exact only if every record is counted exactly once.
 */
import { StreamExecutionEnvironment, Types, ValueStateDescriptor } from "@sluice/datastream";

/** Numbers the job counts. */
export const RECORDS = 30_000;
/** Distinct keys. */
export const KEYS = 101;

const COUNT = new ValueStateDescriptor("count", Types.NUMBER);

export const environment = StreamExecutionEnvironment.create({ name: "keyed job", parallelism: 2 });

/** The running counts, `[key, count]`, collected into the job's result. */
export const counts = environment
  .fromGenerator(RECORDS, (i) => i, { name: "Numbers", recordsPerSecond: 15_000 })
  .rebalance()
  .map((n) => ({ key: n % KEYS, value: n }))
  .keyBy((record) => record.key)
  .process((record, ctx) => {
    const count = ctx.getState(COUNT);
    count.update((count.value() ?? 0) + 1);
    ctx.emit([record.key, count.value()]);
  })
  .returns(Types.TUPLE(Types.NUMBER, Types.NUMBER))
  .uid("count")
  .collect();

export default environment.toJobModule();
