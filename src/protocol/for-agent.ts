/** The protocol folder's face for `llmgw agent` (and the HTTP plumbing of its control API): only the names the agent uses, so that its start does not load the whole folder through index.ts. */
export { type FabricNetwork, type FetchStatus, type CardInventory, type HeartbeatRequest, type HeartbeatResponse, type Inventory, type JoinRequest, type JoinResponse, type LlamaCppInventory, type ReplicaProgress, type ReplicaSpec, type ReplicaState, type ReplicaStatus, type ServerIdentity, agentPaths, fabricNetworkSchema, heartbeatResponseSchema, joinResponseSchema, maxFetchesListed, nodeNameSchema, protocolRefusal, protocolVersion, replicaIdSchema, replicaProgressSchema, replicaSpecSchema, replicaStates, runtimeAdapterLoadSchema, runtimeAdapterUnloadSchema, serverIdentitySchema, startFetchRequestSchema, startReplicaRequestSchema, terminalReplicaStates } from "./agent-protocol.js";
export { flagSchema, isSet, logsQuerySchema } from "./logs-query.js";
export { readErrorBody } from "./error-body.js";
export { softwareVersion, versionHeader } from "./api-version.js";
export { statusForCode } from "./http-status.js";
