// High availability on etcd that says on stderr each time a process opens its services and
// starts a leader retrieval: a test counts the lines of a `sluice` command to see how often it
// opened them. The services are etcd's own, unchanged.
import { EtcdHighAvailabilityServicesFactory } from "@sluice/ha-etcd";

export const SERVICES_OPENED = "counting-ha: high-availability services opened";
export const RETRIEVAL_STARTED = "counting-ha: leader retrieval started";

function counted(retriever) {
  return new Proxy(retriever, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property !== "start") return typeof value === "function" ? value.bind(target) : value;
      return (listener) => {
        process.stderr.write(`${RETRIEVAL_STARTED}\n`);
        return target.start(listener);
      };
    },
  });
}

export class CountingHighAvailabilityServicesFactory {
  async createHAServices(configuration, context) {
    process.stderr.write(`${SERVICES_OPENED}\n`);
    const services = await new EtcdHighAvailabilityServicesFactory().createHAServices(
      configuration,
      context,
    );
    return new Proxy(services, {
      get(target, property) {
        if (property === "getJobManagerLeaderRetriever") {
          return () => counted(target.getJobManagerLeaderRetriever());
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
}
