// High availability on etcd whose job managers take `SLOW_CONFIRMATION_MS` longer to learn that
// their leadership is confirmed: etcd already names the new leader to leader retrieval while the
// job manager still refuses task managers as a standby. A loaded machine opens the same window
// for a few milliseconds; this widens it so that a test lands in it every time.
import { setTimeout as delay } from "node:timers/promises";
import { EtcdHighAvailabilityServicesFactory } from "@sluice/ha-etcd";

export const SLOW_CONFIRMATION_MS = 1_500;

function slowlyConfirming(election) {
  return new Proxy(election, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property !== "confirmLeadership") {
        return typeof value === "function" ? value.bind(target) : value;
      }
      return async (token, address) => {
        await target.confirmLeadership(token, address);
        await delay(SLOW_CONFIRMATION_MS);
      };
    },
  });
}

export class SlowConfirmingHighAvailabilityServicesFactory {
  async createHAServices(configuration, context) {
    const services = await new EtcdHighAvailabilityServicesFactory().createHAServices(
      configuration,
      context,
    );
    let election;
    return new Proxy(services, {
      get(target, property) {
        if (property === "getJobManagerLeaderElection") {
          return () => {
            election ??= slowlyConfirming(target.getJobManagerLeaderElection());
            return election;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
}
