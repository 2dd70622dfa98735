/** Placement: pure decisions of where replicas run, and which to stop to make room. */
export { placeReplicas, type PlacementOptions } from "./place-replicas.js";
export { checkNode, type NodeCheck, type NodeCheckOptions } from "./check-node.js";
export { choosePreemptions, preemptionGate, type PreemptionChoice, type PreemptionOptions } from "./choose-preemptions.js";
export { replicasItMayTake, classRank, type ModelStanding } from "./preemption-rules.js";
export { demandBytesPerCard, demandCardBytes, type CardBytes, type ProfileMemoryInput } from "./demand-bytes-per-card.js";
export { demandProfile } from "./demand-profile.js";
export { defaultScoreWeights, type ScoreWeights } from "./node-scores.js";
export type * from "./types.js";
export { hostingProfiles, type NodeHosting } from "./hosting-profiles.js";
export { headroom, headroomLimit, type Headroom } from "./headroom.js";
export { snapshotCard, type CardFields } from "./snapshot-card.js";
export type { ReplicaDemand, Snapshot, HeldReplica, DemandProfile, Placement, SnapshotNode } from "./types.js";
