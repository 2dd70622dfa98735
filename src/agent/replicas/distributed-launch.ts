import type { DistributedLaunch } from "../../engines/index.js";
import type { DistributedSpec } from "../../protocol/index.js";

/**
 * A member's place in a replica over several nodes, from the server's spec
 * to what its engine's driver is told: rank, the leader's address and the
 * rendezvous port, and the fabric's interface for NCCL and Gloo.
 */
export function distributedLaunch(spec: DistributedSpec | undefined, reservedPort?: number): { distributed?: DistributedLaunch } {
  if (spec === undefined) return {};
  // The leader's own spec carries no port: its agent reserved one when it accepted the start.
  const port = spec.port ?? reservedPort;
  if (port === undefined) throw new Error(`replica ${spec.replica ?? "?"} rank ${spec.rank}: no rendezvous port was given or reserved`);
  return {
    distributed: {
      nodes: spec.nodes,
      rank: spec.rank,
      leaderAddress: spec.leader_address,
      port,
      ...(spec.network_interface !== undefined ? { networkInterface: spec.network_interface } : {}),
    },
  };
}
