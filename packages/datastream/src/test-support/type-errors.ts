/**
 * Compile-time cases of the typed API: each line after `@ts-expect-error` must not compile.
 * Checked by `typed-streams.types.test.ts` (and by the package's `typecheck`).
 */
import {
  FileSink,
  OutputTag,
  StreamExecutionEnvironment,
  Types,
  ValueStateDescriptor,
} from "../index.js";

const env = StreamExecutionEnvironment.create({ name: "types" });
const numbers = env.fromArray([1, 2, 3]);
const words = env.fromArray(["a", "b"]);
const pairs = words.map((word): [string, number] => [word, word.length]);

// Right: types flow through.
const lengths: typeof numbers = words.map((word) => word.length);
pairs.keyBy(([word]) => word).reduce(([w, a], [, b]) => [w, a + b]);
pairs.sinkTo(new FileSink<[string, number]>({ directory: "out" }));
numbers.returns(Types.NUMBER);
void lengths;

// @ts-expect-error: a function of strings on a stream of numbers.
numbers.map((word: string) => word.length);

// @ts-expect-error: filter's predicate takes the record type.
numbers.filter((word: string) => word.length > 0);

// @ts-expect-error: flatMap returns an iterable of records.
words.flatMap((word) => word.length);

// @ts-expect-error: a sink of pairs on a stream of words.
words.sinkTo(new FileSink<[string, number]>({ directory: "out" }));

// @ts-expect-error: a serializer of strings for a stream of numbers.
numbers.returns(Types.STRING);

// @ts-expect-error: the key selector takes the record type.
numbers.keyBy((word: string) => word);

// @ts-expect-error: reduce combines two records of the stream's type.
pairs.keyBy(([word]) => word).reduce((a: number, b: number) => a + b);

const count = new ValueStateDescriptor<number>("count");
pairs
  .keyBy(([word]) => word)
  .process<string>((pair, ctx) => {
    const state = ctx.getState(count);
    // @ts-expect-error: the state holds numbers.
    state.update("one");
    // @ts-expect-error: the process function emits strings.
    ctx.emit(pair[1]);
    // @ts-expect-error: the key is a string.
    const key: number = ctx.getCurrentKey();
    void key;
  });

const late = new OutputTag<string>("late");
numbers.process<number>((n, ctx) => {
  // @ts-expect-error: the side output holds strings.
  ctx.output(late, n);
});
// @ts-expect-error: a side output of strings is a stream of strings.
const side: typeof numbers = numbers.process<number>(() => {}).getSideOutput(late);
void side;
