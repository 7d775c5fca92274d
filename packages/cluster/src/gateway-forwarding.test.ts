import { ConfigurationError } from "@sluice/core";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { type ForwardingTable, forwardedMethods, forwardingGateway } from "./gateway-forwarding.js";
import { inProcessForwarder } from "./test-support/in-process-forwarder.js";

/** A gateway shaped like the runtime's: a request method and a report that must not throw. */
interface CounterGateway {
  readonly name: string;
  add(amount: bigint, note: string): Promise<bigint>;
  report(message: string): void;
}

interface Caller {
  readonly sent: string[];
}

class Counter {
  total = 0n;
  readonly reports: string[] = [];
}

const method = forwardedMethods<CounterGateway, Caller, Counter>().method;

const CounterMethods = {
  add: method("add", {
    params: z.object({ amount: z.string(), note: z.string().max(8) }),
    result: z.object({ total: z.string() }),
    encode: ([amount, note], caller) => {
      caller.sent.push(note);
      return { amount: amount.toString(), note };
    },
    invoke: (counter, { amount }) => {
      counter.total += BigInt(amount);
      return { total: counter.total.toString() };
    },
    decode: ({ total }) => BigInt(total),
  }),
  report: method("report", {
    delivery: "report",
    params: z.object({ message: z.string() }),
    result: z.null(),
    encode: ([message]) => ({ message }),
    invoke: (counter, { message }) => {
      if (message === "bad") throw new ConfigurationError("bad report");
      counter.reports.push(message);
    },
  }),
} as const satisfies ForwardingTable<CounterGateway, Caller, Counter>;

class RemoteCounter
  extends forwardingGateway<CounterGateway, Caller>(CounterMethods)
  implements CounterGateway
{
  readonly name = "remote";
}

/** Both ends in one process: the caller's requests run the receiver's handlers, params checked. */
function connect(counter: Counter): {
  remote: RemoteCounter;
  caller: Caller;
  undelivered: unknown[];
} {
  const caller: Caller = { sent: [] };
  const { forwarder, undelivered } = inProcessForwarder(CounterMethods, counter, caller);
  return { remote: new RemoteCounter(forwarder), caller, undelivered };
}

describe("a gateway forwarded by its table", () => {
  it("sends each call with its encoded arguments and resolves with the decoded reply", async () => {
    const counter = new Counter();
    const { remote, caller } = connect(counter);
    expect(await remote.add(40n, "first")).toBe(40n);
    expect(await remote.add(2n, "second")).toBe(42n);
    expect(counter.total).toBe(42n);
    expect(caller.sent).toEqual(["first", "second"]);
    expect(remote.name).toBe("remote");
  });

  it("rejects a request whose params the receiver's schema refuses, and never throws synchronously", async () => {
    const { remote } = connect(new Counter());
    const call = remote.add(1n, "far too long a note");
    expect(call).toBeInstanceOf(Promise);
    await expect(call).rejects.toThrow(/note/);
  });

  it("delivers a report without a result, and hands a failed one to onUndelivered instead of throwing", async () => {
    const counter = new Counter();
    const { remote, undelivered } = connect(counter);
    expect(remote.report("hello")).toBeUndefined();
    expect(remote.report("bad")).toBeUndefined();
    await new Promise((resolve) => setImmediate(resolve));
    expect(counter.reports).toEqual(["hello"]);
    expect(undelivered).toEqual([
      ["report", expect.objectContaining({ code: "SLUICE_ERR_CONFIG" })],
    ]);
  });
});
