import type { DistributedLaunch } from "../../engines/index.js";
import type { DistributedSpec } from "../../protocol/index.js";

/**
 * A member's place in a replica over several nodes, from the server's spec
 * to what its engine's driver is told: rank, the leader's address and the
 * rendezvous port, and the fabric's interface for NCCL and Gloo.
 */
export function distributedLaunch(spec: DistributedSpec | undefined): { distributed?: DistributedLaunch } {
  if (spec === undefined) return {};
  return {
    distributed: {
      nodes: spec.nodes,
      rank: spec.rank,
      leaderAddress: spec.leader_address,
      port: spec.port,
      ...(spec.network_interface !== undefined ? { networkInterface: spec.network_interface } : {}),
    },
  };
}
