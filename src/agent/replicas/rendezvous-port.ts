import type { ReplicaSpec } from "../../protocol/index.js";
import { findEnginePort } from "../engine-process.js";
import { isTerminal, type Replica } from "./replica-record.js";

/**
 * What a start needs of a rendezvous port: the one a gang leader's spec
 * gives, "reserve" for a leader whose spec leaves it to this agent, and
 * nothing for a worker (it is told its leader's) or a replica on one node.
 */
export function rendezvousPortNeed(spec: ReplicaSpec): number | "reserve" | undefined {
  const distributed = spec.distributed;
  if (distributed?.rank !== 0) return undefined;
  return distributed.port ?? "reserve";
}

/**
 * Ports this agent has promised and may not have bound yet: each live
 * replica's engine port and rendezvous port. A leader's rendezvous port is
 * reserved while its weights download, hours before its engine binds it, so
 * no other pick of this agent may take it meanwhile.
 */
export function portsPromised(replicas: Iterable<Replica>): Set<number> {
  const ports = new Set<number>();
  for (const replica of replicas) {
    if (isTerminal(replica.state)) continue;
    if (replica.port !== undefined) ports.add(replica.port);
    if (replica.rendezvousPort !== undefined) ports.add(replica.rendezvousPort);
  }
  return ports;
}

/**
 * A free port for a leader's rendezvous, picked as an engine's port is
 * (below the kernel's own range, so no outgoing connection takes it before
 * the engine binds it) and apart from every port promised here. `promised`
 * is asked again once the pick is made: another start may have promised the
 * same port while this one was being checked, and the caller records the
 * port before it next awaits anything.
 */
export async function reserveRendezvousPort(promised: () => ReadonlySet<number>): Promise<number> {
  for (;;) {
    const port = await findEnginePort(Math.random, undefined, promised());
    if (!promised().has(port)) return port;
  }
}
