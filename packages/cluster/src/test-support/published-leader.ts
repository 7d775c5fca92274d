import { EtcdHighAvailabilityServicesFactory } from "@sluice/ha-etcd";
import type { Configuration } from "@sluice/runtime";
import type { HighAvailabilityServices, LeaderEndpoints } from "@sluice/runtime-api";

/**
 * A job-manager candidate on etcd that does nothing but lead: its services, once elected,
 * publish `endpoints` (a REST endpoint, a shuffle manager's address) as a real leader does. The
 * caller closes the services, which resigns.
 */
export async function publishLeader(
  configuration: Configuration,
  endpoints: LeaderEndpoints,
): Promise<HighAvailabilityServices> {
  const services = await new EtcdHighAvailabilityServicesFactory().createHAServices(
    configuration,
    {},
  );
  const election = services.getJobManagerLeaderElection();
  await election.startLeaderElection({
    grantLeadership: (token) =>
      void election.confirmLeadership(token, "ws://127.0.0.1:1", endpoints),
    revokeLeadership: () => {},
    handleError: () => {},
  });
  return services;
}
