/**
 * The cycles of a directed graph: its strongly connected components of more than one node
 * (Tarjan's algorithm), each as its nodes. Pipelined regions that would wait for each other
 * through such a cycle are merged, as Flink merges them, so that no region waits forever.
 */
export function cyclesOf<T>(nodes: Iterable<T>, successors: (node: T) => Iterable<T>): T[][] {
  const index = new Map<T, number>();
  const lowLink = new Map<T, number>();
  const onStack = new Set<T>();
  const stack: T[] = [];
  const cycles: T[][] = [];
  const visit = (node: T) => {
    index.set(node, index.size);
    lowLink.set(node, index.get(node) as number);
    stack.push(node);
    onStack.add(node);
    for (const next of successors(node)) {
      if (!index.has(next)) {
        visit(next);
        lowLink.set(node, Math.min(lowLink.get(node) as number, lowLink.get(next) as number));
      } else if (onStack.has(next)) {
        lowLink.set(node, Math.min(lowLink.get(node) as number, index.get(next) as number));
      }
    }
    if (lowLink.get(node) !== index.get(node)) return;
    const component: T[] = [];
    for (;;) {
      const member = stack.pop() as T;
      onStack.delete(member);
      component.push(member);
      if (member === node) break;
    }
    if (component.length > 1) cycles.push(component);
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return cycles;
}
