/** The fleet folder's face: what other folders of src/ use from it. */
export { cardMemoryForLlmgw } from "./card-memory.js";
export { chooseCards } from "./choose-cards.js";
export { cardClassInfo, unknownClassBandwidthGBps } from "./card-classes.js";
export { oneNodeSpec, parseHardwareSpec, type HardwareSpec } from "./hardware-spec.js";
export { nodeState, type NodeState } from "./node-state.js";
export { nvidiaSmiComputeAppsArguments, nvidiaSmiQueryArguments, parseNvidiaSmi, parseNvidiaSmiComputeApps } from "./nvidia-smi.js";
export {
  type InventoryNode,
  type Fleet,
  type Pool,
  largestFreeOnOneNode,
  largestNode,
  poolCardsFree,
  poolCardsTotal,
  fleetFromHardwareSpec,
  fleetFromNodes,
} from "./pools.js";
export { holdsCards, countsTowardModel } from "./replica-life.js";
export { buildReplicaSpec, storableReplicaSpec } from "./replica-spec.js";
export { gangPlace, gangStanding, groupByGang, isFollowerId, memberId, type GangPlace, type MemberStanding } from "./gang-members.js";
