import { ErrorCodes, type SluiceError } from "@sluice/core";
import type { Transport } from "@sluice/network/plugin";
import {
  isShuffleServiceFactory,
  readableConfigOf,
  type ShuffleEnvironmentContext,
} from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import defaultExport, { WsShuffleServiceFactory as FromIndex } from "./index.js";
import { WsShuffleServiceFactory } from "./ws-shuffle-service-factory.js";
import { WsTransport } from "./ws-transport.js";

/** Exposes the protected createTransport for inspection; it reads only the configuration. */
class InspectableFactory extends WsShuffleServiceFactory {
  transportFor(config: Record<string, unknown>): Transport {
    return this.createTransport({
      configuration: readableConfigOf(config),
    } as ShuffleEnvironmentContext);
  }
}

describe("WsShuffleServiceFactory", () => {
  it("is the default and a named export of the package, and a ShuffleServiceFactory", () => {
    expect(defaultExport).toBe(WsShuffleServiceFactory);
    expect(FromIndex).toBe(WsShuffleServiceFactory);
    expect(isShuffleServiceFactory(new WsShuffleServiceFactory())).toBe(true);
  });

  it("creates a WsTransport with the documented defaults", () => {
    const transport = new InspectableFactory().transportFor({});
    expect(transport).toBeInstanceOf(WsTransport);
    const ws = transport as WsTransport;
    expect(ws.name).toBe("ws");
    expect(ws.perMessageDeflate).toBe(false);
    expect(ws.highWaterMark).toBe(1024 * 1024);
    expect(ws.lowWaterMark).toBe(256 * 1024);
  });

  it("reads permessage-deflate and the water marks from the websocket options", () => {
    const transport = new InspectableFactory().transportFor({
      "taskmanager.network.websocket.per-message-deflate": "true",
      "taskmanager.network.websocket.high-water-mark": "4mb",
      "taskmanager.network.websocket.low-water-mark": "1mb",
    }) as WsTransport;
    expect(transport.perMessageDeflate).toBe(true);
    expect(transport.highWaterMark).toBe(4 * 1024 * 1024);
    expect(transport.lowWaterMark).toBe(1024 * 1024);
  });

  it("rejects a low-water mark that is not below the high-water mark, naming both keys", () => {
    let error: SluiceError | undefined;
    try {
      new InspectableFactory().transportFor({
        "taskmanager.network.websocket.high-water-mark": "64kb",
        "taskmanager.network.websocket.low-water-mark": "64kb",
      });
    } catch (e) {
      error = e as SluiceError;
    }
    expect(error?.code).toBe(ErrorCodes.CONFIG);
    expect(error?.message).toContain("taskmanager.network.websocket.low-water-mark");
    expect(error?.message).toContain("taskmanager.network.websocket.high-water-mark");
  });
});
