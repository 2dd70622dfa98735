import type { Dispatcher } from "undici";

export interface FleetSettings {
  readonly heartbeatDeadlineMs: number;
  readonly settlingWindowMs: number;
  /** Told to agents at join. */
  readonly heartbeatIntervalMs: number;
  readonly gpuMemoryUtilization: number;
  /**
   * The key control secrets are derived from (server/server-key.ts). Left out
   * (tests, a one-off in-process server), a key made for this process: agents
   * then learn the new control secret at their next heartbeat.
   */
  readonly serverKey?: Buffer | undefined;
  /** server.yaml's `mirror`: agents are sent `mirror:path` sources resolved against it. */
  readonly mirror?: string | undefined;
  /**
   * The server's environment, read once where the process starts: secret_env
   * and the hub token are taken from it when a replica's spec is built, and
   * checked before a replica is started by hand.
   */
  readonly serverEnvironment: Readonly<Record<string, string | undefined>>;
  /** How agents' HTTPS control APIs are verified when `nodes.ca` names a private CA; undefined: the system's CAs. */
  readonly agentDispatcher?: Dispatcher | undefined;
}
