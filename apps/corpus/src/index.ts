/** The seeded corpus every process of the demo (and the benchmarks) rebuilds from its spec. */
export * from "./corpus.js";
