/**
 * The forwarding bases pass every member of the SPI on, unchanged, to the object they wrap.
 *
 * Each interface's members are listed in a mapped type over the interface (`EveryMember`), so a
 * member added to the SPI does not compile here until it is listed, and then the test calls it
 * on the base: a base that does not forward it fails.
 */
import { describe, expect, it } from "vitest";
import { ConfigOptions } from "../config/config-option.js";
import type { ShuffleEnvironmentContext, ShuffleMasterContext } from "./contexts.js";
import { ForwardingShuffleEnvironment } from "./forwarding-shuffle-environment.js";
import { ForwardingShuffleMaster } from "./forwarding-shuffle-master.js";
import { ForwardingShuffleServiceFactory } from "./forwarding-shuffle-service-factory.js";
import type { ShuffleEnvironment } from "./shuffle-environment.js";
import type { ShuffleMaster } from "./shuffle-master.js";
import {
  isShuffleServiceFactory,
  SHUFFLE_SERVICE_FACTORY_BRAND,
  type ShuffleServiceFactory,
} from "./shuffle-service-factory.js";

/**
 * Every member of `T`, optional ones too: for a method, the arguments the test calls it with
 * (wrapped as `{ returnsNothing }` when it returns `void`, since then there is no result to pass
 * back); for a property, `"property"`.
 */
type EveryMember<T> = {
  readonly [K in keyof T]-?: NonNullable<T[K]> extends (...args: infer A) => infer R
    ? // biome-ignore lint/suspicious/noConfusingVoidType: it picks out the methods declared to return nothing.
      [R] extends [void]
      ? { readonly returnsNothing: A }
      : A
    : "property";
};

type MemberEntry =
  | "property"
  | readonly unknown[]
  | { readonly returnsNothing: readonly unknown[] };

/** An argument the base must hand on as it is: only its identity is checked. */
function token<T>(name: string): T {
  return { token: name } as T;
}

interface Call {
  readonly member: PropertyKey;
  readonly self: unknown;
  readonly args: readonly unknown[];
}

/**
 * An object with every member of `members`: each method records its call (with `this`) and
 * returns a value of its own; each property holds a value of its own.
 */
function recordingDelegate<T>(members: EveryMember<T>): {
  delegate: T;
  calls: Call[];
  resultOf: (member: PropertyKey) => unknown;
} {
  const calls: Call[] = [];
  const values = new Map<PropertyKey, unknown>();
  const delegate: Record<PropertyKey, unknown> = {};
  for (const member of Reflect.ownKeys(members)) {
    const value = { valueOf: String(member) };
    values.set(member, value);
    delegate[member] =
      (members as Record<PropertyKey, unknown>)[member] === "property"
        ? value
        : function record(this: unknown, ...args: unknown[]) {
            calls.push({ member, self: this, args });
            return value;
          };
  }
  return { delegate: delegate as T, calls, resultOf: (member) => values.get(member) };
}

/**
 * The members of `members` that `create(delegate)` does not forward: a method that does not call
 * the delegate's method once, on the delegate, with the same arguments, returning what it
 * returned; a property whose value differs from the delegate's.
 */
function notForwarded<T>(members: EveryMember<T>, create: (delegate: T) => T): PropertyKey[] {
  const missing: PropertyKey[] = [];
  for (const member of Reflect.ownKeys(members)) {
    const { delegate, calls, resultOf } = recordingDelegate(members);
    const forwarding = create(delegate) as Record<PropertyKey, unknown>;
    const entry = (members as Record<PropertyKey, MemberEntry>)[member];
    if (entry === "property") {
      if (forwarding[member] !== resultOf(member)) missing.push(member);
      continue;
    }
    const args = Array.isArray(entry)
      ? entry
      : (entry as { returnsNothing: unknown[] }).returnsNothing;
    const method = forwarding[member];
    const returned = typeof method === "function" ? method.apply(forwarding, args) : undefined;
    const forwarded =
      returned === (Array.isArray(entry) ? resultOf(member) : undefined) &&
      calls.length === 1 &&
      calls[0]?.member === member &&
      calls[0].self === delegate &&
      calls[0].args.length === args.length &&
      calls[0].args.every((arg, i) => arg === args[i]);
    if (!forwarded) missing.push(member);
  }
  return missing;
}

const MASTER_MEMBERS: EveryMember<ShuffleMaster> = {
  start: [],
  close: [],
  registerJob: { returnsNothing: [token("job shuffle context")] },
  unregisterJob: { returnsNothing: [token("job id")] },
  registerPartitionWithProducer: [
    token("job id"),
    token("partition descriptor"),
    token("producer descriptor"),
  ],
  releasePartitionExternally: { returnsNothing: [token("shuffle descriptor")] },
  getAdvertisedAddress: [],
  computeShuffleMemorySizeForTask: [token("task inputs and outputs")],
};

const ENVIRONMENT_MEMBERS: EveryMember<ShuffleEnvironment> = {
  start: [],
  createShuffleIOOwnerContext: ["Source (1/2)#0", token("attempt id"), token("metrics")],
  createResultPartitionWriters: [token("owner"), [token("result partition deployment")]],
  createInputGates: [token("owner"), token("producer state"), [token("input gate deployment")]],
  updatePartitionInfo: [token("attempt id"), token("partition info")],
  releasePartitionsLocally: { returnsNothing: [[token("partition id")]] },
  getPartitionsOccupyingLocalResources: [],
  close: [],
};

const FACTORY_MEMBERS: EveryMember<ShuffleServiceFactory> = {
  [SHUFFLE_SERVICE_FACTORY_BRAND]: "property",
  configOptions: "property",
  supportsTaskSlotThreads: "property",
  createShuffleMaster: [token<ShuffleMasterContext>("master context")],
  createShuffleEnvironment: [token<ShuffleEnvironmentContext>("environment context")],
};

describe("the forwarding bases of decorator plugins", () => {
  it("ForwardingShuffleMaster forwards every member of ShuffleMaster", () => {
    expect(notForwarded(MASTER_MEMBERS, (inner) => new ForwardingShuffleMaster(inner))).toEqual([]);
  });

  it("ForwardingShuffleEnvironment forwards every member of ShuffleEnvironment", () => {
    expect(
      notForwarded(ENVIRONMENT_MEMBERS, (inner) => new ForwardingShuffleEnvironment(inner)),
    ).toEqual([]);
  });

  it("ForwardingShuffleServiceFactory forwards both methods and the wrapped factory's configOptions and supportsTaskSlotThreads", () => {
    // The brand is the decorator's own (see below), not a copy of the wrapped factory's.
    expect(
      notForwarded(FACTORY_MEMBERS, (inner) => new ForwardingShuffleServiceFactory(inner)),
    ).toEqual([SHUFFLE_SERVICE_FACTORY_BRAND]);
  });

  it("catches a member the check lists but the wrapper does not forward", () => {
    const closesNothing = (inner: ShuffleEnvironment) =>
      Object.assign(new ForwardingShuffleEnvironment(inner), { close: async () => {} });
    expect(notForwarded(ENVIRONMENT_MEMBERS, closesNothing)).toEqual(["close"]);
    class DropsOptions extends ForwardingShuffleServiceFactory {
      override get configOptions() {
        return [];
      }
    }
    expect(notForwarded(FACTORY_MEMBERS, (inner) => new DropsOptions(inner))).toEqual([
      "configOptions",
      SHUFFLE_SERVICE_FACTORY_BRAND,
    ]);
  });

  it("lists every member of the SPI interfaces, so an unlisted one does not compile", () => {
    // @ts-expect-error a ShuffleMaster member left out of the list is a compile error
    const master: EveryMember<ShuffleMaster> = { start: [], close: [] };
    // @ts-expect-error so is an optional member of the factory (configOptions)
    const factory: EveryMember<ShuffleServiceFactory> = {
      [SHUFFLE_SERVICE_FACTORY_BRAND]: "property",
      createShuffleMaster: [token("master context")],
      createShuffleEnvironment: [token("environment context")],
    };
    expect(Reflect.ownKeys(master)).toHaveLength(2);
    expect(Reflect.ownKeys(factory)).toHaveLength(3);
    expect(Reflect.ownKeys(MASTER_MEMBERS)).toHaveLength(8);
    expect(Reflect.ownKeys(ENVIRONMENT_MEMBERS)).toHaveLength(8);
    expect(Reflect.ownKeys(FACTORY_MEMBERS)).toHaveLength(5);
  });

  it("brands the decorator as a factory even when the wrapped factory is an unbranded object", () => {
    const inner: ShuffleServiceFactory = {
      createShuffleMaster: () => token("master"),
      createShuffleEnvironment: () => token("environment"),
    };
    const decorator = new ForwardingShuffleServiceFactory(inner);
    expect(decorator[SHUFFLE_SERVICE_FACTORY_BRAND]).toBe(true);
    expect(isShuffleServiceFactory(decorator)).toBe(true);
    expect(decorator.configOptions).toEqual([]);
  });

  it("lets a subclass change one member and add its own options, forwarding the rest", async () => {
    const ENDPOINT = ConfigOptions.key("acme.inner.endpoint").stringType().noDefaultValue();
    const VERBOSE = ConfigOptions.key("acme.logging.verbose").booleanType().defaultValue(false);
    const { delegate, calls } = recordingDelegate(ENVIRONMENT_MEMBERS);
    const inner: ShuffleServiceFactory = {
      configOptions: [ENDPOINT],
      createShuffleMaster: () => token("master"),
      createShuffleEnvironment: () => delegate,
    };
    const closed: string[] = [];
    class LoggingEnvironment extends ForwardingShuffleEnvironment {
      override async close(): Promise<void> {
        await super.close();
        closed.push("closed");
      }
    }
    class LoggingFactory extends ForwardingShuffleServiceFactory {
      constructor() {
        super(inner);
      }
      override get configOptions() {
        return [...super.configOptions, VERBOSE];
      }
      override createShuffleEnvironment(context: ShuffleEnvironmentContext): ShuffleEnvironment {
        return new LoggingEnvironment(super.createShuffleEnvironment(context));
      }
    }
    const factory = new LoggingFactory();
    expect(factory.configOptions).toEqual([ENDPOINT, VERBOSE]);
    const environment = factory.createShuffleEnvironment(token("environment context"));
    await environment.close();
    expect(closed).toEqual(["closed"]);
    expect(environment.getPartitionsOccupyingLocalResources()).toEqual({
      valueOf: "getPartitionsOccupyingLocalResources",
    });
    expect(calls.map((call) => call.member)).toEqual([
      "close",
      "getPartitionsOccupyingLocalResources",
    ]);
  });
});
