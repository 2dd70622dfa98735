/**
 * Every kind an event can have (`ctl events`, GET /api/v1/events): noun-verb,
 * what happened to what. The store takes no other, so this list is complete,
 * and the list in docs/ctl.md is checked against it.
 */
export const eventKinds = [
  "replica-placed",
  "replica-started",
  "replica-ready",
  "replica-draining",
  "replica-preempted",
  "replica-promoted-profile",
  "replica-stopped",
  "replica-failed",
  "replica-lost",
  "replica-orphan-stopped",
  "model-unplaceable",
  "model-waiting",
  "model-restarting",
  "model-restarted",
  "model-context-changed",
  "model-gpus-changed",
  "model-origin-changed",
  "model-updating",
  "model-rolling-back",
  "model-adapter-added",
  "model-adapter-removed",
  "node-cordoned",
  "node-uncordoned",
  "node-draining",
  "canary-started",
  "canary-gated",
  "canary-promoted",
  "canary-aborted",
] as const;

export type EventKind = (typeof eventKinds)[number];
