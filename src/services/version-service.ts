import { type Actor, type CatalogModel, entryAtRevision, revisionedRepo, type ModelEntry } from "../catalog/index.js";
import { DomainError, isDomainError } from "../errors/light.js";
import { checkEntrySources, defaultSourceCheckTimeoutMs, type ReadModelSourceOptions, resolveHubRevision } from "../plan/index.js";
import { type HistoryView, type OriginView, type RolloutView, type UpdateCheckView, dryRunAnswer, type DryRunAnswer } from "../protocol/index.js";
import { type Store, deleteVersionChange, insertVersionChange, listVersionChanges, type VersionChangeKind } from "../store/index.js";
import type { CatalogService } from "./catalog-service.js";
import { recordModelEvent } from "./record-model-event.js";
import { actorText, changeWithSurge, previewWithSurge, type RequestRestart, type SurgePreview } from "./change-with-surge.js";
import { catalogWriteChange } from "./catalog-write-change.js";

/** A commit id as the hub writes it, whole or cut to 7+ characters; anything else is a branch or tag. */
const commitPattern = /^[0-9a-f]{7,64}$/;

/** The branch a model's revision follows: the revision itself when it names a branch, else main. */
function followedBranch(revision: string): string {
  return commitPattern.test(revision) ? "main" : revision;
}

/** Whether two revisions name one commit (a short sha against its whole one). */
function sameCommit(left: string, right: string): boolean {
  if (!commitPattern.test(left) || !commitPattern.test(right)) return left === right;
  return left.startsWith(right) || right.startsWith(left);
}

/**
 * Versions of a served model: its origin, whether the hub has moved past the
 * revision in force, and moving to another revision (update, rollback) by the
 * reconciler's surge restart, each recorded in the version history, the audit
 * log and the events. The new revision is source-checked on the hub before
 * anything is written: a typo in --to, or a commit whose files are broken, is
 * refused at the prompt rather than by replicas failing one after another.
 */
export class VersionService {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly requestRestart: RequestRestart,
    /** The server's hub settings, read at each use (a rotated token needs no restart). */
    private readonly hub: () => ReadModelSourceOptions,
    /** For dry runs; without it (tests of the writes alone) a dry run is refused. */
    private readonly surgePreview?: SurgePreview,
  ) {}

  /** A hub that accepts the connection and never answers must fail the command with a reason, not hang it. */
  private hubWithDeadline(): ReadModelSourceOptions {
    return { requestTimeoutMs: defaultSourceCheckTimeoutMs, ...this.hub() };
  }

  async origin(name: string): Promise<OriginView> {
    const { entry } = await this.catalog.get(name);
    const repo = revisionedRepo(entry);
    return { model: name, origin: entry.origin ?? null, repository: repo?.repo ?? null, revision: repo?.revision ?? null };
  }

  setOrigin(name: string, origin: string, actor: Actor): Promise<OriginView>;
  /** With `dryRun`: the same checks, and the answer it would give, writing nothing. */
  setOrigin(name: string, origin: string, actor: Actor, dryRun: boolean): Promise<OriginView | DryRunAnswer<OriginView>>;
  async setOrigin(name: string, origin: string, actor: Actor, dryRun = false): Promise<OriginView | DryRunAnswer<OriginView>> {
    if (dryRun) {
      const preview = await this.catalog.preview(name, "changing its origin", (entry) => ({ ...entry, origin }));
      const repo = revisionedRepo(preview.after);
      const outcome: OriginView = { model: name, origin, repository: repo?.repo ?? null, revision: repo?.revision ?? null };
      return dryRunAnswer(outcome, [catalogWriteChange(name, preview.before, preview.after)]);
    }
    await this.catalog.replaceEntry(name, "model-origin-changed", "changing its origin", actor, (entry) => ({ ...entry, origin }));
    const view = await this.origin(name);
    await recordModelEvent(this.store, name, "model-origin-changed", `${actorText(actor)} sets the origin of ${name} to ${origin}`);
    return view;
  }

  /** Every model that follows a hub repository, with its branch's head; one model's failure is its own row, not the whole answer's. */
  async updates(): Promise<UpdateCheckView[]> {
    const followed = (await this.catalog.list()).flatMap((model) => {
      const repo = revisionedRepo(model.entry);
      return repo === undefined ? [] : [{ model: model.name, repository: repo.repo, revision: repo.revision, branch: followedBranch(repo.revision) }];
    });
    return Promise.all(
      followed.map(async (row): Promise<UpdateCheckView> => {
        try {
          const latest = await resolveHubRevision(row.repository, row.branch, this.hubWithDeadline());
          return { ...row, latest, update_available: !sameCommit(latest, row.revision), error: null };
        } catch (error) {
          if (!isDomainError(error)) throw error;
          return { ...row, latest: null, update_available: false, error: error.message };
        }
      }),
    );
  }

  update(name: string, to: string | undefined, inPlace: boolean, actor: Actor): Promise<RolloutView>;
  update(name: string, to: string | undefined, inPlace: boolean, actor: Actor, dryRun: boolean): Promise<RolloutView | DryRunAnswer<RolloutView>>;
  async update(name: string, to: string | undefined, inPlace: boolean, actor: Actor, dryRun = false): Promise<RolloutView | DryRunAnswer<RolloutView>> {
    const { entry } = await this.catalog.get(name);
    const current = this.currentRevision(entry, name);
    const target = await resolveHubRevision(current.repo, to ?? followedBranch(current.revision), this.hubWithDeadline());
    return this.rollout(name, current.revision, target, "update", inPlace, actor, dryRun);
  }

  /** Back to the revision the model was at before it moved to the one in force. */
  rollback(name: string, inPlace: boolean, actor: Actor): Promise<RolloutView>;
  rollback(name: string, inPlace: boolean, actor: Actor, dryRun: boolean): Promise<RolloutView | DryRunAnswer<RolloutView>>;
  async rollback(name: string, inPlace: boolean, actor: Actor, dryRun = false): Promise<RolloutView | DryRunAnswer<RolloutView>> {
    const { entry } = await this.catalog.get(name);
    const current = this.currentRevision(entry, name);
    const arrival = (await listVersionChanges(this.store.db, name)).findLast((change) => sameCommit(change.to, current.revision));
    if (arrival === undefined) {
      throw new DomainError(
        "no_previous_revision",
        `${name} has no earlier revision to go back to: its version history records no move to ${current.revision}`,
        `See \`llmgw ctl model history ${name}\`; move to a revision by name with \`llmgw ctl model update ${name} --to REV\`.`,
      );
    }
    const target = await resolveHubRevision(current.repo, arrival.from, this.hubWithDeadline());
    return this.rollout(name, current.revision, target, "rollback", inPlace, actor, dryRun);
  }

  async history(name: string): Promise<HistoryView> {
    const { entry } = await this.catalog.get(name);
    const changes = await listVersionChanges(this.store.db, name);
    return {
      model: name,
      revision: revisionedRepo(entry)?.revision ?? null,
      changes: changes.map((change) => ({ at: change.at, kind: change.kind, from: change.from, to: change.to, actor: change.actor, actor_user: change.actor_user })),
    };
  }

  private currentRevision(entry: ModelEntry, name: string): { repo: string; revision: string } {
    const repo = revisionedRepo(entry);
    if (repo === undefined) {
      throw new DomainError(
        "revision_not_found",
        `${name} follows no hub repository (its origin and profiles are not one hf://org/name), so it has no revisions to move between`,
        `Set its origin with \`llmgw ctl model origin ${name} hf://org/name@revision\`, or change the profiles' sources themselves.`,
      );
    }
    return { repo: repo.repo, revision: repo.revision };
  }

  private async rollout(
    name: string,
    from: string,
    to: string,
    kind: Exclude<VersionChangeKind, "canary-promote">,
    inPlace: boolean,
    actor: Actor,
    dryRun: boolean,
  ): Promise<RolloutView | DryRunAnswer<RolloutView>> {
    if (sameCommit(from, to)) {
      const unchanged: RolloutView = { model: name, kind, from, to, changed: false, restart_before: null, in_place: inPlace, replicas: 0 };
      return dryRun ? dryRunAnswer(unchanged, []) : unchanged;
    }
    const change = kind === "update" ? "updating it" : "rolling it back";
    // Refusals first, writing nothing: declared in the file, a catalog the change would break, sources that do not answer.
    const proposed = await this.catalog.tryChange(name, change, (entry) => entryAtRevision(entry, to));
    await this.checkMovedSources(await this.catalog.get(name), proposed);
    if (dryRun) {
      const { restart, changes } = await previewWithSurge(this.catalog, this.requireSurgePreview(), { name, change, inPlace, mutate: (entry) => entryAtRevision(entry, to) });
      return dryRunAnswer({ model: name, kind, from, to, changed: true, ...restart }, changes);
    }
    let recorded: number | undefined;
    const { restart } = await changeWithSurge(this.catalog, this.requestRestart, {
      name,
      action: kind === "update" ? "model-updated" : "model-rolled-back",
      change,
      actor,
      inPlace,
      mutate: (entry) => entryAtRevision(entry, to),
      alongside: {
        async write(transaction, at, before) {
          // The revision read under the catalog lock: another server's move since this command read it is not lost.
          const moved = revisionedRepo(before)?.revision ?? from;
          await insertVersionChange(transaction, { model: name, from: moved, to, kind, actor: actor.token, actor_user: actor.user, at });
          recorded = (await listVersionChanges(transaction, name)).at(-1)?.id;
        },
        async undo(transaction) {
          if (recorded !== undefined) await deleteVersionChange(transaction, recorded);
        },
      },
    });
    await recordModelEvent(this.store, name, kind === "update" ? "model-updating" : "model-rolling-back", `${actorText(actor)} moves ${name} from ${from} to ${to}${inPlace ? " in place" : ""}: ${restart.replicas} replica${restart.replicas === 1 ? "" : "s"} to replace`);
    return { model: name, kind, from, to, changed: true, ...restart };
  }

  private requireSurgePreview(): SurgePreview {
    if (!this.surgePreview) throw new DomainError("dry_run_unsupported", "this server was built without the reconciler's dry run; nothing was changed", "Leave out ?dry_run to make the change.");
    return this.surgePreview;
  }

  /** Reads the weights' headers of every profile the move changes, at the new revision, through the server's hub settings. */
  private async checkMovedSources(current: CatalogModel, proposed: CatalogModel): Promise<void> {
    const moved = (proposed.entry.profiles ?? []).filter((profile, index) => profile.source !== current.entry.profiles?.[index]?.source);
    if (moved.length === 0) return;
    await checkEntrySources({ name: proposed.name, profiles: moved }, this.hubWithDeadline());
  }
}
