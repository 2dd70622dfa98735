import type { Kysely } from "kysely";
import type { Actor, CatalogModel, ModelEntry } from "../catalog/index.js";
import type { Database } from "../store/index.js";
import type { CatalogService } from "./catalog-service.js";
import { catalogWriteChange } from "./catalog-write-change.js";
import type { Change } from "../protocol/index.js";
import type { ChangeToPreview } from "../reconcile/index.js";

/** The reconciler's surge restart, as the services that change a served model need it. */
export type RequestRestart = (model: CatalogModel, inPlace: boolean, actor: string) => Promise<{ restart_before: string; in_place: boolean; replicas: number }>;

export function actorText(actor: Actor): string {
  return actor.user ? `${actor.token} (${actor.user})` : actor.token;
}

export interface SurgeChange {
  readonly name: string;
  /** The audit action, noun-verb: model-updated, model-adapter-added. */
  readonly action: string;
  /** Completes "refused: declared in server.yaml, …": "updating it". */
  readonly change: string;
  readonly actor: Actor;
  readonly inPlace: boolean;
  readonly mutate: (entry: ModelEntry) => ModelEntry;
  /** Written in the change's transaction (a version history row); `undo` takes it back if the restart is refused. */
  readonly alongside?: { write(transaction: Kysely<Database>, at: string, before: ModelEntry): Promise<void>; undo(transaction: Kysely<Database>): Promise<void> };
}

/**
 * Writes a change that needs the model's replicas restarted, then asks the
 * reconciler for the surge restart. When the restart is refused (no room
 * beside the old replicas), the entry goes back to what the replicas run, in
 * a second audited change: the catalog must never name a revision or an
 * adapter that no replica will load.
 */
export async function changeWithSurge(
  catalog: CatalogService,
  requestRestart: RequestRestart,
  change: SurgeChange,
): Promise<{ model: CatalogModel; before: ModelEntry; restart: Awaited<ReturnType<RequestRestart>> }> {
  const { model, before } = await catalog.replaceEntry(change.name, change.action, change.change, change.actor, change.mutate, async (transaction, before, _after, at) =>
    change.alongside?.write(transaction, at, before),
  );
  try {
    return { model, before, restart: await requestRestart(model, change.inPlace, actorText(change.actor)) };
  } catch (error) {
    await catalog.replaceEntry(change.name, `${change.action}-reverted`, change.change, change.actor, () => before, async (transaction) => change.alongside?.undo(transaction));
    throw error;
  }
}

/** What a dry run of a surge change asks of the reconciler: the restart's refusal, and what its passes would do. */
export interface SurgePreview {
  checkRestart(model: CatalogModel, inPlace: boolean): Promise<readonly unknown[]>;
  preview(change: ChangeToPreview): Promise<Change[]>;
}

/**
 * `changeWithSurge` as a dry run: the catalog the change would produce,
 * refused as the change would be (and its restart refused as it would be,
 * with the model as it will be), and what the restart would start and stop.
 */
export async function previewWithSurge(
  catalog: CatalogService,
  surge: SurgePreview,
  change: Pick<SurgeChange, "name" | "change" | "inPlace" | "mutate">,
): Promise<{ model: CatalogModel; restart: Awaited<ReturnType<RequestRestart>>; changes: Change[] }> {
  const preview = await catalog.preview(change.name, change.change, change.mutate);
  const replaced = await surge.checkRestart(preview.model, change.inPlace);
  const replicas = await surge.preview({ models: preview.catalog.models, restart: { model: change.name, inPlace: change.inPlace } });
  return {
    model: preview.model,
    restart: { restart_before: new Date().toISOString(), in_place: change.inPlace, replicas: replaced.length },
    changes: [catalogWriteChange(change.name, preview.before, preview.after), ...replicas],
  };
}
