import type { ExecutionVertex } from "@sluice/runtime";

/** One vertex's time span in the job, in ms since the job was deployed. */
export interface StageSpan {
  readonly vertex: string;
  /** When the first of its tasks was seen deployed (past CREATED and SCHEDULED). */
  readonly deployedMs: number;
  /** When all of its tasks were seen FINISHED (the job's end when some never were). */
  readonly finishedMs: number;
}

/** How often the job manager looks at its tasks' states. */
const SAMPLE_MS = 20;

const NOT_DEPLOYED = new Set(["CREATED", "SCHEDULED"]);

/**
 * Records when each vertex of a running job was deployed and when it finished, from the job
 * side's view of its tasks' states, sampled every few milliseconds. One sample sees all vertices
 * at once, so the order of the spans is the order the scheduler acted in: a vertex deployed only
 * after another finished starts at or after that one's end.
 */
export class StageTimeline {
  private readonly deployed = new Map<string, number>();
  private readonly finished = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly vertices: () => readonly ExecutionVertex[],
    private readonly startedAt: number,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  /** Takes a last sample, stops, and returns the spans in the order the vertices were deployed. */
  stop(): StageSpan[] {
    clearInterval(this.timer);
    this.sample();
    const end = performance.now() - this.startedAt;
    return [...this.deployed]
      .map(([vertex, deployedMs]) => ({
        vertex,
        deployedMs,
        finishedMs: this.finished.get(vertex) ?? end,
      }))
      .sort((a, b) => a.deployedMs - b.deployedMs);
  }

  private sample(): void {
    const now = performance.now() - this.startedAt;
    const byVertex = new Map<string, ExecutionVertex[]>();
    for (const task of this.vertices()) {
      const name = task.vertex.name;
      byVertex.set(name, [...(byVertex.get(name) ?? []), task]);
    }
    for (const [name, tasks] of byVertex) {
      if (!this.deployed.has(name) && tasks.some((t) => !NOT_DEPLOYED.has(t.state))) {
        this.deployed.set(name, now);
      }
      if (!this.finished.has(name) && tasks.every((t) => t.state === "FINISHED")) {
        this.finished.set(name, now);
      }
    }
  }
}
