/**
 * A keyed job module to stop with a savepoint and resume at other parallelisms, in JavaScript
 * because task manager processes load it: numbers from a source of parallelism 2 (always: a
 * source's offsets belong to its splits), rate-limited so a test can stop it mid-way, rebalanced,
 * keyed by `n % 101`, counted per key in keyed state, every running count collected. The keyed
 * part runs at the environment's parallelism, which a test sets before it builds the graph.
 */
import { StreamExecutionEnvironment, Types, ValueStateDescriptor } from "@sluice/datastream";

/** Numbers the job counts. */
export const RECORDS = 30_000;
/** Distinct keys. */
export const KEYS = 101;

const COUNT = new ValueStateDescriptor("count", Types.NUMBER);

export const environment = StreamExecutionEnvironment.create({
  name: "rescalable keyed job",
  parallelism: 2,
});

/** The running counts, `[key, count]`, collected into the job's result. */
export const counts = environment
  .fromGenerator(RECORDS, (i) => i, { name: "Numbers", parallelism: 2, recordsPerSecond: 8_000 })
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
