import type { Readable } from "node:stream";
import { findReplica, type Store } from "../../store/index.js";
import { replicaLogsFromAgent } from "../agent-client.js";
import type { AgentAddresses } from "./agent-addresses.js";
import { replicaNotFound } from "./fleet-not-found.js";

/** A replica's engine log, as its node's agent streams it: the last `tail` lines, then what follows while `follow`. */
export async function replicaLogs(store: Store, addresses: AgentAddresses, id: string, tail: number, follow: boolean, signal?: AbortSignal): Promise<Readable> {
  const row = await findReplica(store.db, id);
  if (!row) throw replicaNotFound(id);
  const { address } = await addresses.agentOf(row.node);
  return await replicaLogsFromAgent(address, id, tail, follow, signal);
}
