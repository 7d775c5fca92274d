import { describe, expect, it } from "vitest";
import {
  isShuffleServiceFactory,
  missingShuffleServiceFactoryMembers,
  SHUFFLE_SERVICE_FACTORY_BRAND,
} from "./shuffle-service-factory.js";

describe("isShuffleServiceFactory", () => {
  it("uses the global symbol registry so copies of the package share the brand", () => {
    expect(SHUFFLE_SERVICE_FACTORY_BRAND).toBe(Symbol.for("@sluice/shuffle-service-factory"));
  });

  it("accepts a branded object without looking at its members", () => {
    expect(isShuffleServiceFactory({ [Symbol.for("@sluice/shuffle-service-factory")]: true })).toBe(
      true,
    );
  });

  it("accepts an unbranded object with both factory methods, including class instances", () => {
    class Factory {
      createShuffleMaster() {}
      createShuffleEnvironment() {}
    }
    expect(isShuffleServiceFactory(new Factory())).toBe(true);
    expect(
      isShuffleServiceFactory({ createShuffleMaster() {}, createShuffleEnvironment() {} }),
    ).toBe(true);
  });

  it("rejects objects missing a method, non-function members and primitives", () => {
    expect(isShuffleServiceFactory({ createShuffleMaster() {} })).toBe(false);
    expect(isShuffleServiceFactory({ createShuffleMaster() {}, createShuffleEnvironment: 1 })).toBe(
      false,
    );
    expect(isShuffleServiceFactory({ [SHUFFLE_SERVICE_FACTORY_BRAND]: "yes" })).toBe(false);
    expect(isShuffleServiceFactory(null)).toBe(false);
    expect(isShuffleServiceFactory("factory")).toBe(false);
  });

  it("lists the missing members for error messages", () => {
    expect(missingShuffleServiceFactoryMembers({ createShuffleMaster() {} })).toEqual([
      "createShuffleEnvironment",
    ]);
    expect(missingShuffleServiceFactoryMembers(undefined)).toEqual([
      "createShuffleMaster",
      "createShuffleEnvironment",
    ]);
    expect(
      missingShuffleServiceFactoryMembers({
        createShuffleMaster() {},
        createShuffleEnvironment() {},
      }),
    ).toEqual([]);
  });
});
