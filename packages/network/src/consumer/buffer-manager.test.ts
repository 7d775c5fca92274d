import { NetworkBufferPool } from "@sluice/core";
import { afterEach, describe, expect, it } from "vitest";
import { BufferManager, type BufferManagerOwner } from "./buffer-manager.js";
import "@sluice/core/testing";

/** Records the credit the manager announces to its channel. */
class RecordingOwner implements BufferManagerOwner {
  readonly credits: number[] = [];
  notifyBufferAvailable(credit: number): void {
    this.credits.push(credit);
  }
  onBufferPoolDestroyed(): void {}
}

const globals: NetworkBufferPool[] = [];

afterEach(() => {
  for (const global of globals.splice(0)) {
    expect(global).toHaveAllSegmentsAvailable();
    global.destroy();
  }
});

function setUp(floatingBuffers: number) {
  const global = new NetworkBufferPool(8, 64);
  globals.push(global);
  const floating = global.createBufferPool(floatingBuffers, floatingBuffers);
  const owner = new RecordingOwner();
  const manager = new BufferManager(owner, global);
  return { floating, owner, manager };
}

describe("BufferManager", () => {
  it("needs one buffer less for every buffer taken, so it stops waiting for floating buffers the backlog no longer needs", () => {
    const { floating, owner, manager } = setUp(2);
    const elsewhere = floating.requestBuffer(); // another channel holds one of the two
    expect(manager.requestExclusiveBuffers(0, floating, 1_000)).toBeUndefined();
    // Backlog 2: one floating buffer now, and the manager waits for the second.
    expect(manager.requestFloatingBuffers(2)).toBe(1);
    // The first buffered data arrives in it: only one more buffer is needed for the backlog.
    const data = manager.requestBuffer();
    expect(manager.getNumberOfRequiredBuffers()).toBe(1);

    elsewhere?.recycleBuffer(); // the awaited buffer comes: the last one the backlog needs
    expect(owner.credits).toEqual([1]);
    data?.recycleBuffer(); // consumed: it stays in the gate's pool for other channels
    expect(owner.credits).toEqual([1]);
    expect(manager.getNumberOfAvailableBuffers()).toBe(1);
    expect(floating.getNumberOfAvailableMemorySegments()).toBe(1);

    manager.releaseAll();
    floating.destroy();
  });

  it("gives the floating buffer of an empty buffer's credit back to the gate's pool", () => {
    const { floating, owner, manager } = setUp(1);
    expect(manager.requestExclusiveBuffers(0, floating, 1_000)).toBeUndefined();
    expect(manager.requestFloatingBuffers(1)).toBe(1);
    expect(floating.getNumberOfAvailableMemorySegments()).toBe(0);

    manager.releaseCreditOfEmptyBuffer();
    expect(manager.getNumberOfAvailableBuffers()).toBe(0);
    expect(floating.getNumberOfAvailableMemorySegments()).toBe(1);
    expect(owner.credits).toEqual([]);

    manager.releaseAll();
    floating.destroy();
  });
});
