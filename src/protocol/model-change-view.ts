import type { EngineName } from "../catalog/index.js";

/** One engine flag whose value a change alters; null where the flag is absent (a flag without a value is ""). */
export interface ArgumentChange {
  readonly flag: string;
  readonly before: string | null;
  readonly after: string | null;
}

/** The engine arguments one profile's replicas start with after the change, against before. */
export interface ProfileArgumentChanges {
  readonly profile: string;
  readonly engine: EngineName;
  readonly arguments: readonly ArgumentChange[];
}

/** What a change touches, read from the model as it was and as it is. */
export interface ModelChangeSettings {
  /** Tokens one request may use; null when the catalog sets none (the engine's own default). */
  readonly context: number | null;
  readonly profiles: readonly { readonly name: string; readonly engine: EngineName; readonly gpus: number; readonly slots: number }[];
}

/**
 * The answer of POST /api/v1/models/{name}/context and /gpus: the settings
 * before and after, each profile's engine arguments that changed, and the
 * rolling restart it started (none when nothing changed).
 */
export interface ModelChangeView {
  readonly model: string;
  readonly change: "context" | "gpus";
  readonly before: ModelChangeSettings;
  readonly after: ModelChangeSettings;
  readonly profiles: readonly ProfileArgumentChanges[];
  /** Replicas the rolling restart replaces. */
  readonly replicas: number;
  readonly in_place: boolean;
  /** Replicas started before this time are replaced; null when nothing changed and nothing restarts. */
  readonly restart_before: string | null;
  /** Sources whose files could not be read now: the change was checked against the planner's figures kept from their last read. Absent when every file was read. */
  readonly stored_figures?: readonly StoredFiguresView[];
}

/** The planner's figures of a source kept from its last read, used because its files cannot be read now. */
export interface StoredFiguresView {
  readonly source: string;
  /** When the figures were read from its files. */
  readonly read_at: string;
  /** Why its files cannot be read now. */
  readonly unreadable: string;
}
