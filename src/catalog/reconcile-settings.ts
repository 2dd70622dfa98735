/**
 * How the reconciler paces itself. Defaults suit a production fleet; tests
 * and the demo shorten them in server.yaml (`reconcile:`), never by patching
 * the code.
 */
export interface ReconcileSettings {
  /** A full pass at least this often, even when nothing woke it (a change it missed is found here). */
  readonly intervalMs: number;
  /** How long the lease holds without renewal; another server takes over after it. */
  readonly leaseMs: number;
  /** The wait after an engine's first failure; it doubles with each failure in a row. */
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  /** Replicas added under load stay this long after the load has fallen, so a burst does not flap them. */
  readonly scaleDownCooldownMs: number;
  /**
   * Between taking a replica out of routing and telling its engine to drain:
   * gateways and clients holding the old routing table stop sending to it
   * first, so no request arrives at an engine that is already stopping.
   */
  readonly withdrawDelayMs: number;
  /** How many events are kept. */
  readonly eventsKept: number;
  /** A replica recorded but not confirmed by its agent after this long is sent again (a crash between the two). */
  readonly resumeAfterMs: number;
}

export const defaultReconcileSettings: ReconcileSettings = Object.freeze({
  intervalMs: 5_000,
  leaseMs: 15_000,
  backoffInitialMs: 10_000,
  backoffMaxMs: 300_000,
  scaleDownCooldownMs: 300_000,
  withdrawDelayMs: 2_000,
  eventsKept: 10_000,
  resumeAfterMs: 5_000,
});
