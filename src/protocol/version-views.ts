/**
 * Admin API views of a model's versions: where its weights come from, whether
 * the origin has moved on, and each revision it was moved to and from.
 */

export interface OriginView {
  readonly model: string;
  /** As the catalog holds it (hf://org/name@rev, a URL), or null when the model names none. */
  readonly origin: string | null;
  /** The hub repository the model's revisions follow (its origin, or the one repository all its profiles load from); null when none. */
  readonly repository: string | null;
  readonly revision: string | null;
}

export interface UpdateCheckView {
  readonly model: string;
  readonly repository: string;
  /** The revision in force: a commit, or a branch name when the model is not pinned to one. */
  readonly revision: string;
  /** The branch whose head is compared: the revision itself when it is a branch, else main. */
  readonly branch: string;
  /** The branch's head commit on the hub; null when the hub could not be asked (see error). */
  readonly latest: string | null;
  readonly update_available: boolean;
  readonly error: string | null;
}

export interface VersionChangeView {
  readonly at: string;
  readonly kind: "update" | "rollback" | "canary-promote";
  readonly from: string;
  readonly to: string;
  readonly actor: string;
  readonly actor_user: string | null;
}

export interface HistoryView {
  readonly model: string;
  readonly revision: string | null;
  /** Oldest first. */
  readonly changes: readonly VersionChangeView[];
}

/** What `update` and `rollback` did: the revisions, and the replicas the surge replaces. */
export interface RolloutView {
  readonly model: string;
  readonly kind: "update" | "rollback";
  readonly from: string;
  readonly to: string;
  /** False when the model was already at that revision: nothing changed and nothing restarts. */
  readonly changed: boolean;
  /** Replicas started before this moment are replaced (for `--wait`). */
  readonly restart_before: string | null;
  readonly in_place: boolean;
  readonly replicas: number;
}
