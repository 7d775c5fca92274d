import {
  ErrorCodes,
  Float64Serializer,
  Int64Serializer,
  JsonSerializer,
  StringSerializer,
  TupleSerializer,
} from "@sluice/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KeyGroupRange } from "../partitioner/key-group-range.js";
import {
  computeKeyGroupRangeForOperatorIndex,
  computeOperatorIndexForKeyGroup,
} from "../partitioner/key-group-range-assignment.js";
import { KeyGroupStreamPartitioner } from "../partitioner/key-group-stream-partitioner.js";
import { KeyedStateBackend } from "./keyed-state-backend.js";
import { KeyedStateError } from "./keyed-state-error.js";
import type { KeyedStateSnapshot } from "./keyed-state-snapshot.js";
import {
  ListStateDescriptor,
  MapStateDescriptor,
  ValueStateDescriptor,
} from "./state-descriptor.js";

const COUNT = new ValueStateDescriptor("count", Float64Serializer.INSTANCE);
const SEEN = new ListStateDescriptor("seen", StringSerializer.INSTANCE);
const LAST = new MapStateDescriptor("last", StringSerializer.INSTANCE, Int64Serializer.INSTANCE);

function backendOf(maxParallelism: number, parallelism: number, subtask: number) {
  return new KeyedStateBackend<string>({
    keySerializer: StringSerializer.INSTANCE,
    maxParallelism,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtask),
    name: `Count (${subtask + 1}/${parallelism})`,
  });
}

/** The subtask the HASH partitioner routes `key` to: the one whose backend keeps its state. */
function routedTo(key: string, maxParallelism: number, parallelism: number): number {
  const partitioner = new KeyGroupStreamPartitioner<string, string>((k) => k, maxParallelism);
  partitioner.setup(parallelism);
  return partitioner.selectChannel(key);
}

/** Counts `words` in backends of `parallelism` subtasks, each word in the subtask it is routed to. */
function countAt(words: readonly string[], maxParallelism: number, parallelism: number) {
  const backends = Array.from({ length: parallelism }, (_, i) =>
    backendOf(maxParallelism, parallelism, i),
  );
  for (const word of words) {
    const backend = backends[
      routedTo(word, maxParallelism, parallelism)
    ] as KeyedStateBackend<string>;
    backend.setCurrentKey(word);
    const count = backend.getState(COUNT);
    count.update((count.value() ?? 0) + 1);
    backend.getListState(SEEN).add(word.toUpperCase());
    backend.getMapState(LAST).put(word.slice(0, 1), BigInt(word.length));
  }
  return backends;
}

/** Every key's count, list and map, read back through the states. */
function contentsOf(backends: readonly KeyedStateBackend<string>[]) {
  const contents = new Map<string, unknown>();
  for (const backend of backends) {
    for (const key of backend.getKeys("count")) {
      backend.setCurrentKey(key);
      expect(contents.has(key), `key ${key} is in two backends`).toBe(false);
      contents.set(key, {
        count: backend.getState(COUNT).value(),
        seen: [...backend.getListState(SEEN).get()],
        last: [...backend.getMapState(LAST).entries()],
      });
    }
  }
  return contents;
}

describe("KeyedStateBackend", () => {
  it("keeps value, list and map state per key, scoped to the current key", () => {
    const backend = backendOf(128, 1, 0);
    const count = backend.getState(COUNT);
    const seen = backend.getListState(SEEN);
    const last = backend.getMapState(LAST);
    backend.setCurrentKey("a");
    count.update(1);
    seen.add("x");
    last.put("k", 1n);
    backend.setCurrentKey("b");
    expect(count.value()).toBeUndefined();
    expect(seen.get()).toEqual([]);
    expect(last.isEmpty()).toBe(true);
    count.update(5);
    backend.setCurrentKey("a");
    expect(count.value()).toBe(1);
    expect(seen.get()).toEqual(["x"]);
    expect(last.get("k")).toBe(1n);
    count.clear();
    seen.clear();
    last.remove("k");
    expect([...backend.getKeys("count")]).toEqual(["b"]);
    expect([...backend.getKeys("seen")]).toEqual([]);
    expect([...backend.getKeys("last")]).toEqual([]);
  });

  it("compares tuple keys and tuple map keys by value, not by identity", () => {
    const backend = new KeyedStateBackend<[string, number]>({
      keySerializer: new TupleSerializer<[string, number]>([
        StringSerializer.INSTANCE,
        Float64Serializer.INSTANCE,
      ]),
      maxParallelism: 128,
      keyGroupRange: new KeyGroupRange(0, 127),
    });
    const count = backend.getState(COUNT);
    const pairs = backend.getMapState(
      new MapStateDescriptor<[string, number], string>("pairs", undefined, undefined),
    );
    backend.setCurrentKey(["a", 1]);
    count.update(1);
    pairs.put(["x", 2], "first");
    backend.setCurrentKey(["a", 1]);
    count.update((count.value() ?? 0) + 1);
    pairs.put(["x", 2], "second");
    expect(count.value()).toBe(2);
    expect([...pairs.entries()]).toEqual([[["x", 2], "second"]]);
    const restored = new KeyedStateBackend<[string, number]>({
      keySerializer: backend.keySerializer,
      maxParallelism: 128,
      keyGroupRange: new KeyGroupRange(0, 127),
    });
    restored.restore(backend.snapshot());
    restored.setCurrentKey(["a", 1]);
    expect(restored.getState(COUNT).value()).toBe(2);
  });

  it("writes every key into the key group the HASH partitioner routes it by, in ascending key groups", () => {
    const words = Array.from({ length: 500 }, (_, i) => `word-${i}`);
    const backends = countAt(words, 128, 3);
    for (const [subtask, backend] of backends.entries()) {
      const snapshot = backend.snapshot();
      expect(snapshot.format).toBe("sluice-keyed-state");
      expect(snapshot.version).toBe(1);
      expect(snapshot.keySerializer).toBe("string");
      expect(snapshot.states).toEqual([
        { name: "count", type: "VALUE", serializers: ["float64"] },
        { name: "seen", type: "LIST", serializers: ["string"] },
        { name: "last", type: "MAP", serializers: ["string", "int64"] },
      ]);
      const groups = snapshot.keyGroups.map((group) => group.keyGroup);
      expect(groups).toEqual([...groups].sort((a, b) => a - b));
      for (const keyGroup of groups) {
        expect(computeOperatorIndexForKeyGroup(128, 3, keyGroup)).toBe(subtask);
      }
    }
  });

  it("restores every key exactly once at another parallelism from the snapshots of all old subtasks", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(6, 128, 300),
        (words, oldParallelism, newParallelism, maxParallelism) => {
          const before = countAt(words, maxParallelism, oldParallelism);
          const snapshots = JSON.parse(
            JSON.stringify(before.map((backend) => backend.snapshot())),
          ) as KeyedStateSnapshot[];
          const after = Array.from({ length: newParallelism }, (_, i) => {
            const backend = backendOf(maxParallelism, newParallelism, i);
            backend.restore(snapshots);
            // Decoded when a descriptor asks for it.
            backend.getState(COUNT);
            backend.getListState(SEEN);
            backend.getMapState(LAST);
            return backend;
          });
          expect(contentsOf(after)).toEqual(contentsOf(before));
          for (const [i, backend] of after.entries()) {
            for (const key of backend.getKeys("count")) {
              expect(routedTo(key, maxParallelism, newParallelism)).toBe(i);
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("keeps restored state that no descriptor asked for in its next snapshots, unchanged", () => {
    const [before] = countAt(["a", "b", "c"], 128, 1) as [KeyedStateBackend<string>];
    const snapshot = before.snapshot();
    const middle = backendOf(128, 1, 0);
    middle.restore(snapshot);
    middle.getState(COUNT); // only "count" is read by this version of the job
    const carried = middle.snapshot();
    expect(carried.states.map((meta) => meta.name).sort()).toEqual(["count", "last", "seen"]);
    const after = backendOf(128, 1, 0);
    after.restore(carried);
    after.setCurrentKey("b");
    expect(after.getListState(SEEN).get()).toEqual(["B"]);
    expect(after.getMapState(LAST).get("b")).toBe(1n);
  });

  it("refuses to read restored state with another serializer than it was written with", () => {
    const [before] = countAt(["a"], 128, 1) as [KeyedStateBackend<string>];
    const after = backendOf(128, 1, 0);
    after.restore(before.snapshot());
    const error = (() => {
      try {
        after.getState(new ValueStateDescriptor("count", new JsonSerializer<number>()));
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(KeyedStateError);
    expect(error).toMatchObject({ code: ErrorCodes.KEYED_STATE, name: "KeyedStateError" });
    expect((error as Error).message).toContain(
      'state "count" was checkpointed as VALUE of [float64] and is now read as VALUE of [json]',
    );
  });

  it("refuses snapshots of another max parallelism or key serializer, naming both", () => {
    const [before] = countAt(["a"], 128, 1) as [KeyedStateBackend<string>];
    const snapshot = before.snapshot();
    const other = new KeyedStateBackend<string>({
      keySerializer: StringSerializer.INSTANCE,
      maxParallelism: 256,
      keyGroupRange: new KeyGroupRange(0, 255),
    });
    expect(() => other.restore(snapshot)).toThrow(/max parallelism 128, this backend 256/);
    const json = new KeyedStateBackend<string>({
      keySerializer: new JsonSerializer<string>(),
      maxParallelism: 128,
      keyGroupRange: new KeyGroupRange(0, 127),
    });
    expect(() => json.restore(snapshot)).toThrow(
      /keys of serializer "string", this backend "json"/,
    );
  });

  it("fails a snapshot that holds a key outside its key groups, naming the key and the range", () => {
    const backend = backendOf(128, 2, 0);
    const count = backend.getState(COUNT);
    const foreign = Array.from({ length: 50 }, (_, i) => `k${i}`).find(
      (key) => routedTo(key, 128, 2) === 1,
    ) as string;
    backend.setCurrentKey(foreign);
    count.update(1);
    expect(() => backend.snapshot()).toThrow(KeyedStateError);
    expect(() => backend.snapshot()).toThrow(
      new RegExp(
        `key ${foreign} of key group \\d+, outside this backend's KeyGroupRange\\{startKeyGroup=0, endKeyGroup=63\\}`,
      ),
    );
  });

  it("refuses a corrupt key group with a KeyedStateError naming the state and key group", () => {
    const [before] = countAt(["a"], 128, 1) as [KeyedStateBackend<string>];
    const snapshot = before.snapshot();
    const [group] = snapshot.keyGroups;
    const damaged: KeyedStateSnapshot = {
      ...snapshot,
      keyGroups: [{ keyGroup: group?.keyGroup as number, states: { count: "AAAAAQ==" } }],
    };
    const after = backendOf(128, 1, 0);
    after.restore(damaged);
    expect(() => after.getState(COUNT)).toThrow(
      new RegExp(`cannot restore key group ${group?.keyGroup} of state "count"`),
    );
  });

  it("throws an IllegalStateError when state is used before a current key is set", () => {
    const backend = backendOf(128, 1, 0);
    expect(() => backend.getState(COUNT).value()).toThrow(/no current key/);
  });
});
