/**
 * Gateways over the control plane: a table says, per method of a gateway interface (the runtime's
 * `TaskExecutorGateway`, `JobMasterGateway`), how its arguments become a request's params, what
 * the receiver does with them and how the reply becomes the method's result. Both ends are built
 * from the same table: the caller's side by {@link forwardingGateway}, a class whose methods send
 * requests, and the receiver's side by {@link serveGateway}, which installs one handler per entry.
 * A method added to a gateway interface is therefore forwarded by adding one table entry, and the
 * table's type ({@link ForwardingTable}) does not compile until that entry exists.
 */
import type * as z from "zod";
import type { MethodSpec } from "./method-spec.js";

/**
 * The names of the function members of a gateway interface, optional ones included (a gateway
 * that may leave a method out, as `TaskExecutorGateway.triggerCheckpoint`, still forwards it).
 */
export type GatewayMethodName<G> = {
  [K in keyof G]-?: NonNullable<G[K]> extends (...args: never[]) => unknown ? K : never;
}[keyof G] &
  string;

/** The gateway's methods, each present (a forwarding gateway implements the optional ones too). */
export type GatewayMethods<G> = { readonly [K in GatewayMethodName<G>]-?: NonNullable<G[K]> };

type ArgsOf<F> = F extends (...args: infer A) => unknown ? A : never;
type ReturnOf<F> = F extends (...args: never[]) => infer R ? Awaited<R> : never;

/**
 * How a call is delivered. `request`: the gateway method returns a Promise that settles with the
 * reply (or the receiver's error). `report`: the gateway method returns nothing and must not throw
 * (as `JobMasterGateway.updateTaskExecutionState`); it is still a request, so the receiver's
 * error comes back, and goes to the forwarder's `onUndelivered`.
 */
export type Delivery = "request" | "report";

type DeliveryOf<F> = F extends (...args: never[]) => Promise<unknown> ? "request" : "report";

/**
 * One forwarded gateway method.
 *
 * @typeParam Caller - what the calling side hands {@link encode} besides the arguments.
 * @typeParam Receiver - what the receiving side hands {@link invoke} to act on.
 */
export interface ForwardedMethod<
  Caller,
  Receiver,
  Args extends readonly unknown[] = readonly unknown[],
  Result = unknown,
  P extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> extends MethodSpec {
  /** The gateway method's name, which is also the control-plane method's name. */
  readonly name: string;
  readonly params: P;
  readonly result: R;
  readonly delivery: Delivery;
  /** Calling side: the gateway method's arguments as the request's params. */
  encode(args: Args, caller: Caller): z.input<P>;
  /** Receiving side: performs the call with the checked params; resolves with the reply. */
  invoke(receiver: Receiver, params: z.output<P>): Promise<z.input<R> | undefined> | z.input<R>;
  /** Calling side: the checked reply as the gateway method's result. */
  decode(result: z.output<R>): Result;
}

/** What a table entry is built from; `decode` may be left out where the method returns nothing. */
type ForwardedMethodSpec<F, Caller, Receiver, P extends z.ZodType, R extends z.ZodType> = {
  readonly params: P;
  readonly result: R;
  encode(args: ArgsOf<F>, caller: Caller): z.input<P>;
  invoke(
    receiver: Receiver,
    params: z.output<P>,
    // biome-ignore lint/suspicious/noConfusingVoidType: it may return a gateway method's void (the reply is then null)
  ): Promise<z.input<R> | undefined | void> | z.input<R> | undefined | void;
} & (undefined extends ReturnOf<F>
  ? { decode?(result: z.output<R>): ReturnOf<F> }
  : { decode(result: z.output<R>): ReturnOf<F> }) &
  (DeliveryOf<F> extends "report"
    ? { readonly delivery: "report" }
    : { readonly delivery?: never });

/**
 * A complete table for gateway interface `G`: one entry per method, under the method's name.
 * Declaring a table with `satisfies ForwardingTable<...>` makes a method missing from it (say, one
 * newly added to the runtime's gateway) a compile error.
 */
export type ForwardingTable<G, Caller, Receiver> = {
  readonly [K in GatewayMethodName<G>]: ForwardedMethod<
    Caller,
    Receiver,
    ArgsOf<NonNullable<G[K]>>,
    ReturnOf<NonNullable<G[K]>>
  > & { readonly name: K };
};

/** The builder of a table's entries, typed by the gateway interface `G`. */
export interface ForwardedMethodBuilder<G, Caller, Receiver> {
  /** Describes how method `name` of `G` crosses the control plane. */
  method<K extends GatewayMethodName<G>, P extends z.ZodType, R extends z.ZodType>(
    name: K,
    spec: ForwardedMethodSpec<NonNullable<G[K]>, Caller, Receiver, P, R>,
  ): ForwardedMethod<
    Caller,
    Receiver,
    ArgsOf<NonNullable<G[K]>>,
    ReturnOf<NonNullable<G[K]>>,
    P,
    R
  > & { readonly name: K };
}

/** Starts a table for gateway interface `G`. */
export function forwardedMethods<G, Caller, Receiver>(): ForwardedMethodBuilder<
  G,
  Caller,
  Receiver
> {
  return {
    method: (name, spec) => {
      const entry = spec as unknown as {
        readonly params: z.ZodType;
        readonly result: z.ZodType;
        readonly delivery?: Delivery;
        encode(args: unknown, caller: Caller): unknown;
        invoke(receiver: Receiver, params: unknown): unknown;
        decode?(result: unknown): unknown;
      };
      return {
        name,
        params: entry.params,
        result: entry.result,
        delivery: entry.delivery ?? "request",
        encode: entry.encode,
        invoke: async (receiver: Receiver, params: unknown) =>
          ((await entry.invoke(receiver, params)) ?? null) as never,
        decode: entry.decode ?? (() => undefined),
      } as never;
    },
  };
}

/** How the calling side sends a forwarded call. */
export interface Forwarder<Caller> {
  /** What {@link ForwardedMethod.encode} gets besides the arguments. */
  readonly caller: Caller;
  /** Sends `method` with `params`; resolves with the checked reply. */
  request(method: string, params: unknown): Promise<unknown>;
  /** A `report` call failed: the receiver's error, or the connection is gone. */
  onUndelivered(method: string, error: unknown): void;
}

const FORWARDER = Symbol("forwarder");

type AnyForwardedMethod = ForwardedMethod<unknown, unknown>;

/**
 * A base class implementing every method of `table`'s gateway by sending it through the
 * {@link Forwarder} given to its constructor. Subclasses declare `implements G`.
 */
export function forwardingGateway<G, Caller>(
  table: ForwardingTable<G, Caller, never>,
): abstract new (
  forwarder: Forwarder<Caller>,
) => GatewayMethods<G> {
  abstract class ForwardingGateway {
    readonly [FORWARDER]: Forwarder<Caller>;
    constructor(forwarder: Forwarder<Caller>) {
      this[FORWARDER] = forwarder;
    }
  }
  for (const method of Object.values(table) as AnyForwardedMethod[]) {
    Object.defineProperty(ForwardingGateway.prototype, method.name, {
      configurable: true,
      writable: true,
      value: function forward(this: ForwardingGateway, ...args: unknown[]) {
        const forwarder = this[FORWARDER];
        let reply: Promise<unknown>;
        try {
          reply = forwarder
            .request(method.name, method.encode(args, forwarder.caller))
            .then((result) => method.decode(result));
        } catch (error) {
          reply = Promise.reject(error);
        }
        if (method.delivery === "request") return reply;
        reply.catch((error: unknown) => forwarder.onUndelivered(method.name, error));
        return undefined;
      },
    });
  }
  return ForwardingGateway as unknown as abstract new (
    forwarder: Forwarder<Caller>,
  ) => GatewayMethods<G>;
}

/** Where the receiving side installs a handler (an `RpcPeer`). */
export interface GatewayServer {
  handle(method: string, handler: (params: unknown) => Promise<unknown>): void;
}

/**
 * Installs one handler per entry of `table` on `server`: each runs the entry's `invoke` on the
 * receiver `receiver()` returns when the request arrives (it may throw, e.g. when the caller has
 * not registered yet: the caller then gets the error).
 */
export function serveGateway<Receiver>(
  server: GatewayServer,
  table: { readonly [name: string]: ForwardedMethod<never, Receiver> },
  receiver: () => Receiver,
): void {
  for (const method of Object.values(table)) {
    server.handle(method.name, async (params) => method.invoke(receiver(), params));
  }
}
