import type * as z from "zod";

/** One control-plane method: the schema its params and its result are checked against on receipt. */
export interface MethodSpec {
  /** The request's params, checked by the receiver before its handler runs. */
  readonly params: z.ZodType;
  /** The reply's result, checked by the caller before the call resolves. */
  readonly result: z.ZodType;
}

/** The methods one side of the control plane offers, by name. */
export type MethodTable = Readonly<Record<string, MethodSpec>>;

/** What a method's caller sends. */
export type ParamsOf<M extends MethodSpec> = z.input<M["params"]>;

/** What a method's caller gets back, once checked. */
export type ResultOf<M extends MethodSpec> = z.output<M["result"]>;
