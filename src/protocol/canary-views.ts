export type ArmName = "stable" | "canary";

/** One arm's traffic at the gateway: requests answered, those that failed (5xx or a cut stream), and the 95th percentile of latency. */
export interface ArmCounts {
  readonly requests: number;
  readonly errors: number;
  /** Upper bound of the latency histogram bucket holding the 95th percentile, in ms; null with no request. */
  readonly p95_ms: number | null;
}

export interface ArmView extends ArmCounts {
  /** errors / requests; null with no request. */
  readonly error_rate: number | null;
  /** Replicas of this arm that serve now. */
  readonly ready_replicas: number;
}

export interface CanaryGateView {
  readonly max_error_rate: number | null;
  readonly max_p95_ms: number | null;
  readonly min_requests: number;
  /** How long the canary must hold before it is promoted, and the span its numbers are read over, e.g. "5m". */
  readonly window: string;
}

export const canaryStates = ["running", "promoting", "aborting", "promoted", "aborted"] as const;
export type CanaryState = (typeof canaryStates)[number];

/** `ctl model canaries --json`: `{"canaries": [Canary]}`; the canary commands answer one. */
export interface CanaryView {
  readonly model: string;
  /** The revision the canary runs. */
  readonly revision: string;
  /** The revision the stable replicas ran when the canary started; null when the model named none. */
  readonly from_revision: string | null;
  /** Percent of the model's requests sent to the canary. */
  readonly weight: number;
  readonly replicas: number;
  readonly state: CanaryState;
  /** Why it was promoted or aborted, with the numbers; null while it runs. */
  readonly decision: string | null;
  readonly started_at: string;
  readonly ended_at: string | null;
  readonly actor: string;
  readonly gate: CanaryGateView | null;
  /** Counted since the canary started, by this server's gateway and the gateways reporting to it. */
  readonly arms: { readonly stable: ArmView; readonly canary: ArmView };
}
