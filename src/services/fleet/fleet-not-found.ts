import { DomainError } from "../../errors/light.js";

export function nodeNotFound(name: string): DomainError {
  return new DomainError("node_not_found", `no node named ${name} has joined this server`, "List nodes with `llmgw ctl nodes`; a new node joins with `llmgw agent --token` (token from `llmgw ctl node token`).");
}

export function replicaNotFound(id: string): DomainError {
  return new DomainError("replica_not_found", `no replica ${id} on this server`, "List replicas with `llmgw ctl replicas`.");
}
