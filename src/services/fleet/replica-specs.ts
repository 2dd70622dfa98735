import { randomBytes } from "node:crypto";
import { entryAtRevision, profilePosition, resolveModel, resolveSecretEnv, type CatalogModel, type ResolvedProfile } from "../../catalog/index.js";
import { newToken } from "../../auth/index.js";
import { DomainError } from "../../errors/light.js";
import { buildReplicaSpec } from "../../fleet/index.js";
import type { ReplicaSpec } from "../../protocol/index.js";
import type { StoredReplica } from "../../store/index.js";
import type { CatalogService } from "../catalog-service.js";
import type { FleetSettings } from "./fleet-settings.js";

/** What a replica started by hand or placed may ask for beyond its model and profile. */
export interface ReplicaExtras {
  readonly context?: number | undefined;
  readonly simulation?: ReplicaSpec["simulation"];
  /** A member of a replica over several nodes. */
  readonly distributed?: ReplicaSpec["distributed"];
}

/**
 * The specs agents are sent: the catalog's model and profile, the server's
 * settings, secret_env read from the server's environment, and the replica's
 * own key, which only gateways hold.
 */
export class ReplicaSpecs {
  constructor(
    private readonly catalog: CatalogService,
    private readonly settings: Pick<FleetSettings, "gpuMemoryUtilization" | "mirror" | "serverEnvironment">,
  ) {}

  /** The model's profile, at `revision` when given (a canary's replicas run the model at another revision). */
  async profileOf(modelName: string, profileName: string | undefined, revision?: string): Promise<{ model: CatalogModel; profile: ResolvedProfile }> {
    const inForce = await this.catalog.get(modelName);
    const model = revision === undefined || inForce.entry.external ? inForce : resolveModel(entryAtRevision(inForce.entry, revision), inForce.source);
    if (model.entry.external) {
      throw new DomainError("invalid_profile", `${model.name} is an external model: it runs at its provider, not on a node`, "Start a model that has profiles.");
    }
    const profile = model.profiles[profilePosition(model.entry, profileName, "replica")];
    if (!profile) throw new Error("a profile found by position vanished");
    return { model, profile };
  }

  /** Refuses a profile whose secret_env names a variable the server's environment lacks. */
  checkSecrets(model: CatalogModel, profile: ResolvedProfile): void {
    resolveSecretEnv(model.name, profile, this.settings.serverEnvironment);
  }

  newReplicaId(modelName: string): string {
    return `${modelName.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "").slice(0, 100) || "replica"}-${randomBytes(3).toString("hex")}`;
  }

  /** A new replica's spec, with a new key. */
  forNew(id: string, model: CatalogModel, profile: ResolvedProfile, cards: readonly number[], extras: ReplicaExtras): ReplicaSpec {
    return buildReplicaSpec({
      id,
      model,
      profile,
      cards,
      context: extras.context,
      gpuMemoryUtilization: this.settings.gpuMemoryUtilization,
      simulation: extras.simulation,
      serverEnvironment: this.settings.serverEnvironment,
      apiKey: newToken("replica"),
      mirror: this.settings.mirror,
      distributed: extras.distributed,
    });
  }

  /** A recorded replica's spec again: the stored spec holds secret_env's variable names, the values are read again from the environment. */
  again(id: string, model: CatalogModel, profile: ResolvedProfile, stored: NonNullable<StoredReplica["spec"]>): ReplicaSpec {
    return buildReplicaSpec({
      id,
      model,
      profile,
      cards: stored.cards,
      context: stored.context,
      gpuMemoryUtilization: stored.gpu_memory_utilization,
      simulation: stored.simulation,
      serverEnvironment: this.settings.serverEnvironment,
      apiKey: stored.api_key,
      mirror: this.settings.mirror,
      distributed: stored.distributed,
    });
  }
}
