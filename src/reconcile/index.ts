/** The reconcile folder's face: what other folders of src/ use from it. */
export { canaryVerdict } from "./canary-verdict.js";
export { checkContextChange } from "./check-context-change.js";
export { checkGpusChange } from "./check-gpus-change.js";
export { checkRestartRoom } from "./check-restart-room.js";
export { demandProfiles } from "./desired-model.js";
export { engineArgumentChanges } from "./engine-argument-changes.js";
export { fitsNowhere } from "./fits-nowhere.js";
export { observe, replacedByRestart, type Observation } from "./observe.js";
export { readFleetState, type FleetStateSources } from "./read-fleet-state.js";
export { type ChangeToPreview, Reconciler } from "./reconciler.js";
export type { ReconcilerLog, ReconcilerFacts } from "./reconciler-ports.js";
export type { ObservedReplica } from "./types.js";
