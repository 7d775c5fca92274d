import type { JobGraph, JobVertex, JobVertexSpec } from "../job-graph.js";

/**
 * Adds a source to `graph`: by default the vertex `Source` running the test invokable
 * `source`, with the configuration (how many records or words it writes) the test gives.
 */
export function addSource(
  graph: JobGraph,
  spec: Partial<JobVertexSpec> & Pick<JobVertexSpec, "parallelism">,
): JobVertex {
  return graph.addVertex({ name: "Source", invokable: "source", ...spec });
}
