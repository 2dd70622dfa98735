/** The store folder's face: what other folders of src/ use from it. */
export { listArmSlots, putArmSlots } from "./arm-count-rows.js";
export { listAuditEvents, type AuditEvent, insertAuditEvent } from "./audit-rows.js";
export { type CanaryRow, listCanaries, findCanary, makeCanaryReplicasStable, putCanary, updateCanary } from "./canary-rows.js";
export { readChangeSignatures, type ChangeSignatures } from "./change-signatures.js";
export {
  type StoredReplica,
  listReplicas,
  deleteReplica,
  findNode,
  findReplica,
  updateReplica,
  upsertReplica,
  type StoredNode,
  insertJoinToken,
  joinTokenExists,
  upsertNode,
  oldestLastSeen,
  touchNode,
  findReplicas,
  listNodes,
  listNodeTimes,
  listReplicaHoldings,
  listReplicaProgress,
  readFleetRevisions,
  type ReplicaWrite,
} from "./fleet-rows.js";
export { listGatewayKeys, insertGatewayKey, type GatewayKeyRow, revokeGatewayKey } from "./gateway-key-rows.js";
export { deleteModelEntry, insertModelEntry, listModelEntries, readCatalogRevision, replaceModelEntry } from "./model-rows.js";
export { type Store, openStore } from "./open-store.js";
export {
  listEvents,
  readLease,
  type EventFilter,
  type ModelStatusRow,
  deleteReplicaIntent,
  emptyModelStatus,
  updateModelStatus,
  withdrawReplicaIntent,
  type ReplicaIntentRow,
  listModelStatus,
  listReplicaIntents,
  holdLease,
  insertEvents,
  releaseLease,
  trimEvents,
  type NewEvent,
  insertReplicaIntent,
  listNodeControls,
  setNodeControl,
} from "./reconcile-rows.js";
export type { Database } from "./schema.js";
export { readServerKeyCheck, recordServerKeyCheck } from "./server-key-rows.js";
export { findSourceFacts, saveSourceFacts } from "./source-facts-rows.js";
export { findTokenByHash, type TokenRole, countTokens, insertToken, listTokens, deleteTokenByName, type TokenListing } from "./token-rows.js";
export { addUsage, sumUsage } from "./usage-rows.js";
export { insertVersionChange, listVersionChanges, deleteVersionChange, type VersionChangeKind } from "./version-rows.js";
