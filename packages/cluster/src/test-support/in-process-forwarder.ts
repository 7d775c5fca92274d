import type { ForwardedMethod, Forwarder } from "../gateway-forwarding.js";
import { serveGateway } from "../gateway-forwarding.js";

/** A {@link Forwarder} wired straight to a receiver, and the reports it could not deliver. */
export interface InProcessForwarder<Caller> {
  readonly forwarder: Forwarder<Caller>;
  /** `[method, error]` of every `report` call whose receiver threw. */
  readonly undelivered: [string, unknown][];
}

/**
 * Both ends of a forwarding table in one process, as the control plane joins them: the caller's
 * requests run the receiver's handlers, with the params checked against the method's schema on
 * receipt and the reply against its result schema (the way `RpcPeer` checks them).
 */
export function inProcessForwarder<Caller, Receiver>(
  table: { readonly [name: string]: ForwardedMethod<never, Receiver> },
  receiver: Receiver,
  caller: Caller,
): InProcessForwarder<Caller> {
  const handlers = new Map<string, (params: unknown) => Promise<unknown>>();
  serveGateway({ handle: (name, handler) => handlers.set(name, handler) }, table, () => receiver);
  const undelivered: [string, unknown][] = [];
  return {
    undelivered,
    forwarder: {
      caller,
      request: async (name, params) => {
        const spec = table[name];
        const handler = handlers.get(name);
        if (spec === undefined || handler === undefined) throw new Error(`no method ${name}`);
        // Over the wire the params are JSON: what JSON cannot carry must not get through here.
        const sent = JSON.parse(JSON.stringify(params)) as unknown;
        return spec.result.parse(await handler(spec.params.parse(sent)));
      },
      onUndelivered: (name, error) => undelivered.push([name, error]),
    },
  };
}
