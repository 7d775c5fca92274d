import { describe, expect, it } from "vitest";
import { StreamExecutionEnvironment } from "./stream-execution-environment.js";
import { LOADER, localConfiguration } from "./test-support/local-execution.js";
import { ValueStateDescriptor } from "@sluice/runtime";

describe("smoke", () => {
  it("counts words", async () => {
    const env = StreamExecutionEnvironment.create({ name: "smoke", parallelism: 2 });
    const COUNT = new ValueStateDescriptor<number>("count");
    const out = env
      .fromArray(["to be or not to be", "that is the question"])
      .flatMap((line) => line.split(" "))
      .keyBy((w) => w)
      .process<[string, number]>((word, ctx) => {
        const c = ctx.getState(COUNT);
        c.update((c.value() ?? 0) + 1);
        ctx.emit([word, c.value() ?? 0]);
      })
      .collect();
    console.log(env.compile().graph.vertices.map((v) => v.name));
    const result = await env.execute(localConfiguration(), { loader: LOADER });
    expect(result.status, String(result.error)).toBe("FINISHED");
    console.log(out.results(result));
  });
});
